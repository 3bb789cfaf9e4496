import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JobEvent } from '../../domain/events.ts';
import { CALLBACK_MAX_ATTEMPTS, decideJob, summariseWarnings, type JobCommand } from '../../domain/job-decide.ts';
import { evolveJob, foldJob, initialJobState, type JobState } from '../../domain/job.ts';
import { Rejection, type RejectionCode } from '../../domain/rejections.ts';
import type { JobOptions, PageSource } from '../../src/pipeline/pipeline.ts';

const T0 = new Date('2026-11-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const JOB = '6f1c1d0e-1111-4222-8333-444455556666';
const OPTIONS: JobOptions = { llmTier: 'cheap', preset: 'letter', pipelineSteps: ['layout', 'recognition', 'correction', 'export'], pdfFormat: 'pdf', webhookUrl: 'https://example.org/hook' };
const pages = (count: number): PageSource[] =>
  Array.from({ length: count }, (_, i) => ({ pageNumber: i + 1, name: `${i + 1}.jpg`, blobKey: `jobs/${JOB}/pages/${i + 1}.jpg`, sha256: 'ab', bytes: 10 }));

const submit = (count = 2, options: JobOptions = OPTIONS): JobCommand => ({
  type: 'SubmitJob', jobId: JOB, accountId: 'acc', keyId: 'key', pages: pages(count), options, uploadKey: 'up', now: T0, retentionSeconds: 7 * 86400, idempotency: null,
});

/** Applies commands in order, returning the state and every event. */
function run(...commands: JobCommand[]): { state: JobState; events: JobEvent[] } {
  let state = initialJobState();
  const events: JobEvent[] = [];
  for (const command of commands) {
    const produced = decideJob(state, command);
    events.push(...produced);
    state = produced.reduce(evolveJob, state);
  }
  return { state, events };
}

function rejects(state: JobState, command: JobCommand, code: RejectionCode): void {
  assert.throws(() => decideJob(state, command), (error: unknown) => error instanceof Rejection && error.code === code);
}

const step = (page: number | null, name: 'layout' | 'recognition' | 'correction' | 'export', seconds = 1): JobCommand => ({ type: 'StartStep', page, step: name, now: at(seconds) });
const complete = (page: number, warnings: string[] = []): JobCommand => ({ type: 'CompletePage', page, resultKey: `r${page}`, lineCount: 3, warnings, correction: null, now: at(5) });
const succeed: JobCommand = { type: 'SucceedJob', archiveKey: 'a.zip', archiveBytes: 10, archiveSha256: 'ff', now: at(9) };
const fail: JobCommand = { type: 'FailJob', errorMessage: 'page 1 (1.jpg): broken', page: 1, now: at(9) };
const cancel: JobCommand = { type: 'CancelJob', now: at(3) };
const attempt = (n: number, ok: boolean): JobCommand => ({ type: 'RecordCallbackAttempt', attempt: n, url: 'https://example.org/hook', ok, httpStatus: ok ? 200 : 500, error: null, durationMs: 5, now: at(10 + n), retryScale: 1 });
const doneJob = () => run(submit(2), step(1, 'layout'), complete(1), step(2, 'layout'), complete(2), step(null, 'export'), succeed);

describe('decideJob', () => {
  describe('SubmitJob', () => {
    test('queues the job with its pages, options and expiry', () => {
      const { state, events } = run(submit(3));
      assert.deepEqual(events.map((event) => event.type), ['JobQueued']);
      assert.equal(state.status, 'queued');
      assert.equal(state.pageCount, 3);
      assert.equal(state.expiresAt, '2026-11-08T10:00:00.000Z');
    });
    test('refuses a second submission of the same job', () => rejects(run(submit()).state, submit(), 'job_already_exists'));
    test('refuses a job without pages', () => assert.throws(() => decideJob(initialJobState(), submit(0))));
  });

  test('every command but SubmitJob needs an existing job', () => {
    for (const command of [cancel, step(1, 'layout'), complete(1), succeed, fail, attempt(1, true), { type: 'StartJob', now: T0 } as JobCommand]) {
      rejects(initialJobState(), command, 'job_not_found');
    }
  });

  describe('StartJob', () => {
    test('queued → processing, once', () => {
      const { state, events } = run(submit(), { type: 'StartJob', now: at(1) }, { type: 'StartJob', now: at(2) });
      assert.deepEqual(events.map((event) => event.type), ['JobQueued', 'JobStarted']);
      assert.equal(state.status, 'processing');
      assert.equal(state.startedAt, at(1).toISOString());
    });
    test('refused once the job ended', () => {
      rejects(run(submit(), cancel).state, { type: 'StartJob', now: at(4) }, 'job_cancelled');
      rejects(doneJob().state, { type: 'StartJob', now: at(20) }, 'job_already_finished');
    });
  });

  describe('StartStep', () => {
    test('the first step of a queued job also starts it', () => {
      assert.deepEqual(run(submit(), step(1, 'layout')).events.map((event) => event.type), ['JobQueued', 'JobStarted', 'StepStarted']);
    });
    test('a retried task re-entering a step it passed records nothing', () => {
      const { events } = run(submit(), step(1, 'layout'), step(1, 'recognition'), step(1, 'layout'), step(1, 'recognition'));
      assert.equal(events.filter((event) => event.type === 'StepStarted').length, 2);
    });
    test('a completed page records no more steps', () => {
      assert.deepEqual(decideJob(run(submit(), step(1, 'layout'), complete(1)).state, step(1, 'correction')), []);
    });
    test('refuses an unknown page and misplaced export steps', () => {
      rejects(run(submit(2)).state, step(3, 'layout'), 'unknown_page');
      assert.throws(() => decideJob(run(submit()).state, step(1, 'export')));
      assert.throws(() => decideJob(run(submit()).state, step(null, 'layout')));
    });
    test('export starts once, and only when every page is complete', () => {
      const partial = run(submit(2), step(1, 'layout'), complete(1)).state;
      rejects(partial, step(null, 'export'), 'pages_incomplete');
      const all = run(submit(2), step(1, 'layout'), complete(1), step(2, 'layout'), complete(2), step(null, 'export'));
      assert.equal(all.state.exportStarted, true);
      assert.deepEqual(decideJob(all.state, step(null, 'export')), []);
    });
    test('refused on an ended job', () => {
      rejects(run(submit(), cancel).state, step(1, 'layout'), 'job_cancelled');
      rejects(run(submit(), fail).state, step(1, 'layout'), 'job_already_finished');
    });
  });

  describe('CompletePage', () => {
    test('records the page once', () => {
      const { state, events } = run(submit(2), step(1, 'layout'), complete(1), complete(1));
      assert.equal(events.filter((event) => event.type === 'PageCompleted').length, 1);
      assert.equal(state.completedPages[1], 'r1');
    });
    test('refused before the job started, for unknown pages and after cancel', () => {
      rejects(run(submit()).state, complete(1), 'job_not_started');
      rejects(run(submit(1), step(1, 'layout')).state, complete(2), 'unknown_page');
      rejects(run(submit(), step(1, 'layout'), cancel).state, complete(1), 'job_cancelled');
    });
  });

  describe('SucceedJob', () => {
    test('processing with every page complete → done, with the page warnings summarised', () => {
      const { state } = run(submit(2), step(1, 'layout'), complete(1, ['no correction provider is configured']), step(2, 'layout'), complete(2, ['no correction provider is configured']), succeed);
      assert.equal(state.status, 'done');
      assert.equal(state.warningMessage, 'all pages: no correction provider is configured');
      assert.equal(state.callback?.state, 'pending');
    });
    test('idempotent once done', () => assert.deepEqual(decideJob(doneJob().state, succeed), []));
    test('refused with pages missing, before start, and after cancel or failure', () => {
      rejects(run(submit(2), step(1, 'layout'), complete(1)).state, succeed, 'pages_incomplete');
      rejects(run(submit(2)).state, succeed, 'job_not_started');
      rejects(run(submit(2), cancel).state, succeed, 'job_cancelled');
      rejects(run(submit(2), fail).state, succeed, 'job_already_finished');
    });
  });

  describe('FailJob', () => {
    test('queued or processing → failed with the reason', () => {
      assert.equal(run(submit(), fail).state.status, 'failed');
      const { state } = run(submit(), step(1, 'layout'), fail);
      assert.equal(state.status, 'failed');
      assert.equal(state.errorMessage, 'page 1 (1.jpg): broken');
    });
    test('idempotent once failed; refused after done or cancel', () => {
      assert.deepEqual(decideJob(run(submit(), fail).state, fail), []);
      rejects(doneJob().state, fail, 'job_already_finished');
      rejects(run(submit(), cancel).state, fail, 'job_cancelled');
    });
  });

  describe('CancelJob', () => {
    test('queued → cancelled and processing → cancelled', () => {
      const queued = run(submit(), cancel);
      assert.equal(queued.state.status, 'cancelled');
      assert.deepEqual(queued.events.at(-1), { type: 'JobCancelled', data: { cancelledAt: at(3).toISOString(), previousState: 'queued' } });
      assert.equal(run(submit(), step(1, 'layout'), cancel).state.status, 'cancelled');
    });
    test('cancelling a cancelled job again records nothing', () => assert.deepEqual(decideJob(run(submit(), cancel).state, cancel), []));
    test('cancelling done or failed is a typed rejection', () => {
      rejects(doneJob().state, cancel, 'job_already_finished');
      rejects(run(submit(), fail).state, cancel, 'job_already_finished');
    });
  });

  describe('RecordCallbackAttempt', () => {
    test('a 2xx ends delivery', () => {
      const { state, events } = run(...doneJobCommands(), attempt(1, true));
      assert.equal(state.callback?.state, 'delivered');
      assert.equal((events.at(-1) as Extract<JobEvent, { type: 'CallbackAttempted' }>).data.nextAttemptAt, null);
      rejects(state, attempt(2, true), 'no_callback');
    });
    test('failures are retried after 1, 5, 25, 125, 625 s × scale, then abandoned after the sixth attempt', () => {
      const commands = [...doneJobCommands()];
      for (let n = 1; n <= CALLBACK_MAX_ATTEMPTS; n++) commands.push(attempt(n, false));
      const { state, events } = run(...commands);
      const attempts = events.filter((event) => event.type === 'CallbackAttempted') as Extract<JobEvent, { type: 'CallbackAttempted' }>[];
      assert.equal(attempts.length, 6);
      const delays = attempts.slice(0, 5).map((event, index) => (Date.parse(event.data.nextAttemptAt!) - at(11 + index).getTime()) / 1000);
      assert.deepEqual(delays, [1, 5, 25, 125, 625]);
      assert.equal(attempts[5].data.nextAttemptAt, null);
      assert.equal(events.at(-1)?.type, 'CallbackAbandoned');
      assert.equal(state.callback?.state, 'abandoned');
    });
    test('a repeated attempt records nothing; an attempt out of order is an error', () => {
      const { state } = run(...doneJobCommands(), attempt(1, false));
      assert.deepEqual(decideJob(state, attempt(1, false)), []);
      assert.throws(() => decideJob(state, attempt(3, false)));
    });
    test('failed jobs call back too; jobs without webhook_url have nothing to deliver', () => {
      assert.equal(run(submit(), fail, attempt(1, true)).state.callback?.event, 'job.failed');
      const noHook = run(submit(1, { ...OPTIONS, webhookUrl: null }), fail).state;
      rejects(noHook, attempt(1, true), 'no_callback');
      rejects(run(submit(), step(1, 'layout')).state, attempt(1, true), 'no_callback');
    });
  });

  describe('ExpireResult', () => {
    test('a finished job expires at expires_at, once', () => {
      const expire = { type: 'ExpireResult', now: at(7 * 86400) } as JobCommand;
      const { state } = run(...doneJobCommands(), expire);
      assert.equal(state.resultExpired, true);
      assert.deepEqual(decideJob(state, expire), []);
    });
    test('refused before expires_at and for running jobs', () => {
      rejects(doneJob().state, { type: 'ExpireResult', now: at(3600) }, 'result_not_expired');
      rejects(run(submit()).state, { type: 'ExpireResult', now: at(8 * 86400) }, 'job_not_done');
    });
    test('terminal jobs accept callback attempts and expiry, nothing else', () => {
      const done = doneJob().state;
      for (const command of [step(1, 'layout'), complete(1), fail]) assert.throws(() => decideJob(done, command), Rejection);
    });
  });
});

function doneJobCommands(): JobCommand[] {
  return [submit(2), step(1, 'layout'), complete(1), step(2, 'layout'), complete(2), step(null, 'export'), succeed];
}

test('summariseWarnings names the pages of each distinct warning', () => {
  const state = foldJob(run(submit(3), step(1, 'layout'), complete(1, ['a']), complete(2, ['a', 'b'])).events);
  assert.equal(summariseWarnings(state), 'pages 1, 2: a; page 2: b');
  assert.equal(summariseWarnings(run(submit(1)).state), null);
});

test('current step of each page follows the steps entered', () => {
  const { state } = run(submit(2), step(1, 'layout'), step(1, 'recognition'), step(2, 'layout'));
  assert.deepEqual(state.pageSteps, { 1: 'recognition', 2: 'layout' });
});
