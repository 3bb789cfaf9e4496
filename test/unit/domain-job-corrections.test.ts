// Corrections in the job decider (docs/corrections.md): a done job's lines corrected as
// PageTextCorrected (text before and after, the actor), the rules that refuse one, the re-export
// it schedules, and ResultReexported recorded once per correction version.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CorrectionActor, JobEvent } from '../../domain/events.ts';
import { decideJob, type JobCommand } from '../../domain/job-decide.ts';
import { evolveJob, initialJobState } from '../../domain/job.ts';
import { QUEUES, reexportTaskId } from '../../src/queue/queues.ts';
import { REEXPORT_DELAY_MS, reactionsTo } from '../../src/queue/reactions.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const job = deciderSpec({ decide: decideJob, evolve: evolveJob, initialState: initialJobState });
const JOB = '6f1c1d0e-1111-4222-8333-444455556666';
const T0 = Date.parse('2026-11-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const ACTOR: CorrectionActor = { kind: 'api_key', keyId: 'key', label: 'archive team' };
const MACHINE = { r1_l1: 'Dear Sir', r1_l2: 'I write to yon' };

const queued: JobEvent = {
  type: 'JobQueued',
  data: {
    jobId: JOB,
    accountId: 'acc',
    keyId: 'key',
    pageCount: 1,
    pages: [{ pageNumber: 1, name: '1.jpg', blobKey: 'b', sha256: 'ab', bytes: 1 }],
    options: {
      llmTier: 'cheap',
      preset: 'generic',
      pipelineSteps: ['layout', 'recognition', 'export'],
      pdfFormat: 'pdf',
      webhookUrl: null,
    },
    uploadKey: 'up',
    createdAt: at(0).toISOString(),
    expiresAt: at(3600).toISOString(),
    idempotency: null,
  },
};
const done: JobEvent[] = [
  queued,
  { type: 'JobStarted', data: { startedAt: at(1).toISOString() } },
  { type: 'PageCompleted', data: { page: 1, resultKey: 'r1', lineCount: 2, warnings: [], correction: null } },
  {
    type: 'JobSucceeded',
    data: { finishedAt: at(5).toISOString(), archiveKey: 'a1.zip', archiveBytes: 1, archiveSha256: 'ff', warningMessage: null },
  },
];
const correct = (lines: Array<{ id: string; text: string }>, seconds = 10, page = 1): JobCommand => ({
  type: 'CorrectPageText',
  page,
  lines,
  machineText: MACHINE,
  actor: ACTOR,
  now: at(seconds),
});
const corrected = (lines: Array<{ id: string; before: string; after: string }>, seconds = 10): JobEvent => ({
  type: 'PageTextCorrected',
  data: { page: 1, lines, actor: ACTOR, correctedAt: at(seconds).toISOString() },
});
const reexport = (version: number): JobCommand => ({
  type: 'RecordReexport',
  correctionVersion: version,
  correctedLines: 1,
  archiveKey: `a${version + 1}.zip`,
  archiveBytes: 2,
  archiveSha256: 'ee',
  now: at(20),
});

describe('CorrectPageText', () => {
  test('records each changed line with its text before and after, and who', () => {
    const after = job
      .given(done)
      .when(correct([{ id: 'r1_l2', text: 'I write to you' }]))
      .then([corrected([{ id: 'r1_l2', before: 'I write to yon', after: 'I write to you' }])]);
    assert.deepEqual(after.correctedLines, { 1: { r1_l2: 'I write to you' } });
    assert.equal(after.pageTextVersions[1], 1);
    assert.equal(after.correctionVersion, 1);
  });

  test('a second correction of a line has the first as its text before', () => {
    job
      .given([...done, corrected([{ id: 'r1_l2', before: 'I write to yon', after: 'I write to you' }])])
      .when(correct([{ id: 'r1_l2', text: 'I write to you.' }], 11))
      .then([corrected([{ id: 'r1_l2', before: 'I write to you', after: 'I write to you.' }], 11)]);
  });

  test('lines sent with the text they have are no change: nothing is recorded', () =>
    job
      .given(done)
      .when(correct([{ id: 'r1_l1', text: 'Dear Sir' }]))
      .thenNothing());

  test('an unknown line is refused', () =>
    job
      .given(done)
      .when(correct([{ id: 'r9_l9', text: 'x' }]))
      .thenRejects('unknown_line'));
  test('an unknown page is refused', () =>
    job
      .given(done)
      .when(correct([{ id: 'r1_l1', text: 'x' }], 10, 2))
      .thenRejects('unknown_page'));
  test('a job not done is refused (retryable)', () =>
    job
      .given(done.slice(0, 3))
      .when(correct([{ id: 'r1_l1', text: 'x' }]))
      .thenRejects('job_not_done'));
  test('after expires_at it is refused', () =>
    job
      .given(done)
      .when(correct([{ id: 'r1_l1', text: 'x' }], 3600))
      .thenRejects('job_expired'));
  test('after ResultExpired it is refused', () =>
    job
      .given([...done, { type: 'ResultExpired', data: { expiredAt: at(9).toISOString() } }])
      .when(correct([{ id: 'r1_l1', text: 'x' }]))
      .thenRejects('job_expired'));

  test('its reaction is a re-export task of its own version, a moment later', () => {
    const event = corrected([{ id: 'r1_l2', before: 'I write to yon', after: 'I write to you' }]);
    const after = [...done, event].reduce(evolveJob, initialJobState());
    assert.deepEqual(reactionsTo([event], after), [
      {
        kind: 'send',
        queue: QUEUES.export,
        id: reexportTaskId(JOB, 1),
        data: { jobId: JOB, correctionVersion: 1 },
        startAfter: new Date(at(10).getTime() + REEXPORT_DELAY_MS),
      },
    ]);
  });
});

describe('RecordReexport', () => {
  const withCorrections = [
    ...done,
    corrected([{ id: 'r1_l2', before: 'I write to yon', after: 'I write to you' }]),
    corrected([{ id: 'r1_l1', before: 'Dear Sir', after: 'Dear Sirs' }], 11),
  ];
  test('records the archive of the newest correction; the download serves it', () => {
    const after = job
      .given(withCorrections)
      .when(reexport(2))
      .then([
        {
          type: 'ResultReexported',
          data: {
            correctionVersion: 2,
            correctedLines: 1,
            archiveKey: 'a3.zip',
            archiveBytes: 2,
            archiveSha256: 'ee',
            exportedAt: at(20).toISOString(),
          },
        },
      ]);
    assert.equal(after.archiveKey, 'a3.zip');
    assert.equal(after.exportedCorrectionVersion, 2);
  });
  test('an older version than the one recorded changes nothing', () => {
    const recorded: JobEvent = {
      type: 'ResultReexported',
      data: {
        correctionVersion: 2,
        correctedLines: 1,
        archiveKey: 'a3.zip',
        archiveBytes: 2,
        archiveSha256: 'ee',
        exportedAt: at(20).toISOString(),
      },
    };
    job
      .given([...withCorrections, recorded])
      .when(reexport(1))
      .thenNothing();
    job
      .given([...withCorrections, recorded])
      .when(reexport(2))
      .thenNothing();
  });
});
