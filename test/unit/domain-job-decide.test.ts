// The job decider: given the events of a job, when a command, then these events or this
// rejection (test/support/decider-spec.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JobEvent, JobOptions, PageSource } from '../../domain/events.ts';
import { CALLBACK_MAX_ATTEMPTS, decideJob, summariseWarnings, type JobCommand } from '../../domain/job-decide.ts';
import { deliveryIdFor, evolveJob, foldJob, initialJobState } from '../../domain/job.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const job = deciderSpec({ decide: decideJob, evolve: evolveJob, initialState: initialJobState });

const T0 = new Date('2026-11-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();
const JOB = '6f1c1d0e-1111-4222-8333-444455556666';
const HOOK = 'https://example.org/hook';
const OPTIONS: JobOptions = {
  llmTier: 'cheap',
  preset: 'letter',
  pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
  pdfFormat: 'pdf',
  webhookUrl: HOOK,
};
const pages = (count: number): PageSource[] =>
  Array.from({ length: count }, (_, i) => ({
    pageNumber: i + 1,
    name: `${i + 1}.jpg`,
    blobKey: `jobs/${JOB}/pages/${i + 1}.jpg`,
    sha256: 'ab',
    bytes: 10,
  }));

// Commands.
const submit = (count = 2, options: JobOptions = OPTIONS): JobCommand => ({
  type: 'SubmitJob',
  jobId: JOB,
  accountId: 'acc',
  keyId: 'key',
  pages: pages(count),
  options,
  uploadKey: 'up',
  now: T0,
  retentionSeconds: 7 * 86400,
  idempotency: null,
});
const start: JobCommand = { type: 'StartJob', now: at(1) };
const step = (page: number | null, name: 'layout' | 'recognition' | 'correction' | 'export'): JobCommand => ({
  type: 'StartStep',
  page,
  step: name,
  now: at(1),
});
const complete = (page: number, warnings: string[] = []): JobCommand => ({
  type: 'CompletePage',
  page,
  resultKey: `r${page}`,
  lineCount: 3,
  warnings,
  correction: null,
  now: at(5),
});
const succeed: JobCommand = { type: 'SucceedJob', archiveKey: 'a.zip', archiveBytes: 10, archiveSha256: 'ff', now: at(9) };
const fail: JobCommand = { type: 'FailJob', errorMessage: 'page 1 (1.jpg): broken', page: 1, now: at(9) };
const cancel: JobCommand = { type: 'CancelJob', now: at(3) };
const attempt = (n: number, ok: boolean): JobCommand => ({
  type: 'RecordCallbackAttempt',
  attempt: n,
  url: HOOK,
  ok,
  httpStatus: ok ? 200 : 500,
  error: null,
  durationMs: 5,
  now: at(10 + n),
  retryScale: 1,
});
const expire = (seconds: number): JobCommand => ({ type: 'ExpireResult', now: at(seconds) });

// Facts.
const queued = (count = 2, options: JobOptions = OPTIONS): JobEvent => ({
  type: 'JobQueued',
  data: {
    jobId: JOB,
    accountId: 'acc',
    keyId: 'key',
    pageCount: count,
    pages: pages(count),
    options,
    uploadKey: 'up',
    createdAt: iso(0),
    expiresAt: '2026-11-08T10:00:00.000Z',
    idempotency: null,
  },
});
const started: JobEvent = { type: 'JobStarted', data: { startedAt: iso(1) } };
const stepStarted = (page: number | null, name: 'layout' | 'recognition' | 'correction' | 'export'): JobEvent => ({
  type: 'StepStarted',
  data: { page, step: name },
});
const pageCompleted = (page: number, warnings: string[] = []): JobEvent => ({
  type: 'PageCompleted',
  data: { page, resultKey: `r${page}`, lineCount: 3, warnings, correction: null },
});
const succeeded: JobEvent = {
  type: 'JobSucceeded',
  data: { finishedAt: iso(9), archiveKey: 'a.zip', archiveBytes: 10, archiveSha256: 'ff', warningMessage: null },
};
const failed: JobEvent = { type: 'JobFailed', data: { finishedAt: iso(9), errorMessage: 'page 1 (1.jpg): broken', page: 1 } };
const cancelled = (previousState: 'queued' | 'processing'): JobEvent => ({
  type: 'JobCancelled',
  data: { cancelledAt: iso(3), previousState },
});
const attempted = (
  n: number,
  ok: boolean,
  nextAttemptAt: string | null,
  event: 'job.completed' | 'job.failed' = 'job.completed',
): JobEvent => ({
  type: 'CallbackAttempted',
  data: {
    deliveryId: deliveryIdFor(JOB, event),
    event,
    attempt: n,
    url: HOOK,
    ok,
    httpStatus: ok ? 200 : 500,
    error: null,
    durationMs: 5,
    nextAttemptAt,
  },
});

const running = [queued(), started];
const done = [queued(), started, pageCompleted(1), pageCompleted(2), stepStarted(null, 'export'), succeeded];

describe('decideJob', () => {
  describe('SubmitJob', () => {
    test('queues the job with its pages, options and expiry', () => {
      job
        .given()
        .when(submit(3))
        .then([queued(3)]);
    });
    test('refuses a second submission of the same job', () => job.given([queued()]).when(submit()).thenRejects('job_already_exists'));
    test('refuses a job without pages', () =>
      assert.throws(() => decideJob(initialJobState(), submit(0)), { name: 'Error', message: 'a job needs at least one page' }));
  });

  test('every command but SubmitJob needs an existing job', () => {
    for (const command of [cancel, step(1, 'layout'), complete(1), succeed, fail, attempt(1, true), start])
      job.given().when(command).thenRejects('job_not_found');
  });

  describe('StartJob', () => {
    test('queued → processing, once', () => {
      job.given([queued()]).when(start).then([started]);
      job.given(running).when(start).thenNothing();
    });
    test('refused once the job ended', () => {
      job
        .given([queued(), cancelled('queued')])
        .when(start)
        .thenRejects('job_cancelled');
      job.given(done).when(start).thenRejects('job_already_finished');
    });
  });

  describe('StartStep', () => {
    test('the first step of a queued job also starts it', () => {
      job
        .given([queued()])
        .when(step(1, 'layout'))
        .then([started, stepStarted(1, 'layout')]);
    });
    test('a retried task re-entering a step it passed records nothing', () => {
      const passed = [...running, stepStarted(1, 'layout'), stepStarted(1, 'recognition')];
      job.given(passed).when(step(1, 'layout')).thenNothing();
      job.given(passed).when(step(1, 'recognition')).thenNothing();
      job
        .given(passed)
        .when(step(1, 'correction'))
        .then([stepStarted(1, 'correction')]);
    });
    test('a completed page records no more steps', () =>
      job
        .given([...running, pageCompleted(1)])
        .when(step(1, 'correction'))
        .thenNothing());
    test('refuses an unknown page and misplaced export steps', () => {
      job
        .given([queued(2)])
        .when(step(3, 'layout'))
        .thenRejects('unknown_page');
      assert.throws(() => decideJob(foldJob([queued()]), step(1, 'export')), {
        name: 'Error',
        message: 'the export step runs per job, not per page',
      });
      assert.throws(() => decideJob(foldJob([queued()]), step(null, 'layout')), {
        name: 'Error',
        message: 'only the export step runs per job',
      });
    });
    test('export starts once, and only when every page is complete', () => {
      job
        .given([...running, pageCompleted(1)])
        .when(step(null, 'export'))
        .thenRejects('pages_incomplete');
      job
        .given([...running, pageCompleted(1), pageCompleted(2)])
        .when(step(null, 'export'))
        .then([stepStarted(null, 'export')]);
      job
        .given([...running, pageCompleted(1), pageCompleted(2), stepStarted(null, 'export')])
        .when(step(null, 'export'))
        .thenNothing();
    });
    test('refused on an ended job', () => {
      job
        .given([queued(), cancelled('queued')])
        .when(step(1, 'layout'))
        .thenRejects('job_cancelled');
      job.given([queued(), failed]).when(step(1, 'layout')).thenRejects('job_already_finished');
    });
  });

  describe('CompletePage', () => {
    test('records the page once', () => {
      const state = job
        .given(running)
        .when(complete(1))
        .then([pageCompleted(1)]);
      assert.equal(state.completedPages[1], 'r1');
      job
        .given([...running, pageCompleted(1)])
        .when(complete(1))
        .thenNothing();
    });
    test('refused before the job started, for unknown pages and after cancel', () => {
      job.given([queued()]).when(complete(1)).thenRejects('job_not_started');
      job
        .given([queued(1), started])
        .when(complete(2))
        .thenRejects('unknown_page');
      job
        .given([...running, cancelled('processing')])
        .when(complete(1))
        .thenRejects('job_cancelled');
    });
    test('a page decided from its own view (the job-level facts and that page) decides as from the whole job', () => {
      // What a page command of the engine sees: other pages' events are not in its view.
      const whole = [...running, stepStarted(1, 'layout'), pageCompleted(2), stepStarted(1, 'recognition')];
      const pageOne = [...running, stepStarted(1, 'layout'), stepStarted(1, 'recognition')];
      for (const command of [complete(1), step(1, 'layout'), step(1, 'correction')]) {
        assert.deepEqual(job.given(pageOne).when(command).events(), job.given(whole).when(command).events());
      }
    });
  });

  describe('SucceedJob', () => {
    test('processing with every page complete → done, with the page warnings summarised and a callback pending', () => {
      const warning = 'no correction provider is configured';
      const state = job
        .given([...running, pageCompleted(1, [warning]), pageCompleted(2, [warning])])
        .when(succeed)
        .then([{ type: 'JobSucceeded', data: { ...(succeeded.data as object), warningMessage: `all pages: ${warning}` } } as JobEvent]);
      assert.equal(state.status, 'done');
      assert.equal(state.callback?.state, 'pending');
    });
    test('idempotent once done', () => job.given(done).when(succeed).thenNothing());
    test('refused with pages missing, before start, and after cancel or failure', () => {
      job
        .given([...running, pageCompleted(1)])
        .when(succeed)
        .thenRejects('pages_incomplete');
      job.given([queued()]).when(succeed).thenRejects('job_not_started');
      job
        .given([queued(), cancelled('queued')])
        .when(succeed)
        .thenRejects('job_cancelled');
      job.given([queued(), failed]).when(succeed).thenRejects('job_already_finished');
    });
  });

  describe('FailJob', () => {
    test('queued or processing → failed with the reason', () => {
      job.given([queued()]).when(fail).then([failed]);
      const state = job
        .given([...running, stepStarted(1, 'layout')])
        .when(fail)
        .then([failed]);
      assert.equal(state.errorMessage, 'page 1 (1.jpg): broken');
    });
    test('idempotent once failed; refused after done or cancel', () => {
      job.given([queued(), failed]).when(fail).thenNothing();
      job.given(done).when(fail).thenRejects('job_already_finished');
      job
        .given([queued(), cancelled('queued')])
        .when(fail)
        .thenRejects('job_cancelled');
    });
  });

  describe('CancelJob', () => {
    test('queued → cancelled and processing → cancelled, naming the state it left', () => {
      job
        .given([queued()])
        .when(cancel)
        .then([cancelled('queued')]);
      job
        .given(running)
        .when(cancel)
        .then([cancelled('processing')]);
    });
    test('cancelling a cancelled job again records nothing', () =>
      job
        .given([queued(), cancelled('queued')])
        .when(cancel)
        .thenNothing());
    test('cancelling done or failed is a typed rejection', () => {
      job.given(done).when(cancel).thenRejects('job_already_finished');
      job.given([queued(), failed]).when(cancel).thenRejects('job_already_finished');
    });
  });

  describe('RecordCallbackAttempt', () => {
    test('a 2xx ends delivery', () => {
      const state = job
        .given(done)
        .when(attempt(1, true))
        .then([attempted(1, true, null)]);
      assert.equal(state.callback?.state, 'delivered');
      job
        .given([...done, attempted(1, true, null)])
        .when(attempt(2, true))
        .thenRejects('no_callback');
    });
    test('failures are retried after 1, 5, 25, 125, 625 s × scale, then abandoned after the sixth attempt', () => {
      const history = [...done];
      const delays = [1, 5, 25, 125, 625];
      for (let n = 1; n < CALLBACK_MAX_ATTEMPTS; n++) {
        const next = new Date(at(10 + n).getTime() + delays[n - 1] * 1000).toISOString();
        job
          .given(history)
          .when(attempt(n, false))
          .then([attempted(n, false, next)]);
        history.push(attempted(n, false, next));
      }
      const state = job
        .given(history)
        .when(attempt(CALLBACK_MAX_ATTEMPTS, false))
        .then([
          attempted(6, false, null),
          { type: 'CallbackAbandoned', data: { deliveryId: deliveryIdFor(JOB, 'job.completed'), attempts: 6 } },
        ]);
      assert.equal(state.callback?.state, 'abandoned');
    });
    test('a repeated attempt records nothing; an attempt out of order is an error', () => {
      const history = [...done, attempted(1, false, iso(12))];
      job.given(history).when(attempt(1, false)).thenNothing();
      assert.throws(() => decideJob(foldJob(history), attempt(3, false)), { name: 'Error', message: 'callback attempt 3 out of order' });
    });
    test('failed jobs call back too; jobs without webhook_url have nothing to deliver', () => {
      job
        .given([queued(), failed])
        .when(attempt(1, true))
        .then([attempted(1, true, null, 'job.failed')]);
      job
        .given([queued(1, { ...OPTIONS, webhookUrl: null }), failed])
        .when(attempt(1, true))
        .thenRejects('no_callback');
      job
        .given([...running, stepStarted(1, 'layout')])
        .when(attempt(1, true))
        .thenRejects('no_callback');
    });
  });

  describe('ExpireResult', () => {
    test('a finished job expires at expires_at, once', () => {
      job
        .given(done)
        .when(expire(7 * 86400))
        .then([{ type: 'ResultExpired', data: { expiredAt: iso(7 * 86400) } }]);
      job
        .given([...done, { type: 'ResultExpired', data: { expiredAt: iso(7 * 86400) } }])
        .when(expire(7 * 86400 + 5))
        .thenNothing();
    });
    test('refused before expires_at and for running jobs', () => {
      job.given(done).when(expire(3600)).thenRejects('result_not_expired');
      job
        .given([queued()])
        .when(expire(8 * 86400))
        .thenRejects('job_not_done');
    });
    test('terminal jobs accept callback attempts and expiry, nothing else', () => {
      for (const command of [step(1, 'layout'), complete(1), fail]) job.given(done).when(command).thenRejects('job_already_finished');
    });
  });
});

test('summariseWarnings names the pages of each distinct warning', () => {
  assert.equal(
    summariseWarnings(foldJob([queued(3), started, pageCompleted(1, ['a']), pageCompleted(2, ['a', 'b'])])),
    'pages 1, 2: a; page 2: b',
  );
  assert.equal(summariseWarnings(foldJob([queued(1)])), null);
});

test('current step of each page follows the steps entered', () => {
  const state = foldJob([queued(2), started, stepStarted(1, 'layout'), stepStarted(1, 'recognition'), stepStarted(2, 'layout')]);
  assert.deepEqual(state.pageSteps, { 1: 'recognition', 2: 'layout' });
});
