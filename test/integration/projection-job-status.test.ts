// The job_status and job_pages read models on their own: what the status route serves at each
// point of a job's life, including the current step while pages run side by side.
import { describe, test } from 'node:test';
import type { GivenEvent } from '../support/projection-spec.ts';
import { jobStatusProjection } from '../../projections/job-status.ts';
import { projectionSpec } from '../support/projection-spec.ts';

const spec = await projectionSpec(jobStatusProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const JOB = 'e0000000-0000-4000-8000-000000000001';
const stream = `job-${JOB}`;
const event = (type: GivenEvent['type'], data: object): GivenEvent => ({ streamId: stream, type, data });
const queued = (webhookUrl: string | null) =>
  event('JobQueued', {
    jobId: JOB,
    accountId: A,
    keyId: null,
    pageCount: 3,
    pages: [1, 2, 3].map((n) => ({ pageNumber: n, name: `${n}.png`, blobKey: `jobs/${JOB}/pages/000${n}.png`, sha256: 'ab', bytes: 1 })),
    options: {
      llmTier: 'cheap',
      preset: 'generic',
      pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
      pdfFormat: 'pdfa-2b',
      webhookUrl,
    },
    uploadKey: `jobs/${JOB}/upload.zip`,
    createdAt: '2026-11-01T09:00:00.000Z',
    expiresAt: '2026-11-08T09:00:00.000Z',
    idempotency: null,
  });
const step = (page: number | null, name: string) => event('StepStarted', { page, step: name });
const completed = (page: number) =>
  event('PageCompleted', { page, resultKey: `r/${page}`, lineCount: page * 10, warnings: [], correction: null });

describe('job_status projection', () => {
  test('while pages run side by side the current step is the earliest step of an unfinished page', async () => {
    await spec.given([
      queued(null),
      event('JobStarted', { startedAt: '2026-11-01T09:00:01.000Z' }),
      step(1, 'layout'),
      step(2, 'layout'),
      step(1, 'recognition'),
      step(2, 'recognition'),
      step(3, 'layout'),
      step(3, 'recognition'),
      step(3, 'correction'),
      completed(3),
      step(1, 'correction'),
    ]);
    await spec.thenRows('job_status', 'job_id', [
      {
        job_id: JOB,
        state: 'processing',
        page_count: 3,
        pages_done: 1,
        current_step: 'recognition',
        started_at: '2026-11-01T09:00:01.000Z',
        finished_at: null,
        version: 11,
      },
    ]);
    await spec.thenRows('job_pages', 'page_number', [
      { page_number: 1, step: 'correction', completed: false, result_key: null, line_count: null },
      { page_number: 2, step: 'recognition', completed: false, result_key: null, line_count: null },
      { page_number: 3, step: 'correction', completed: true, result_key: 'r/3', line_count: 30 },
    ]);
    await spec.replayFromZero();
  });

  test('a done job with a webhook: no current step, the archive, and a pending callback that a failed attempt makes retrying', async () => {
    await spec.given([
      queued('https://example.org/hook'),
      event('JobStarted', { startedAt: '2026-11-01T09:00:01.000Z' }),
      completed(1),
      completed(2),
      completed(3),
      step(null, 'export'),
      event('JobSucceeded', {
        finishedAt: '2026-11-01T09:05:00.000Z',
        archiveKey: `jobs/${JOB}/result.zip`,
        archiveBytes: 1234,
        archiveSha256: 'ff',
        warningMessage: null,
      }),
      event('CallbackAttempted', {
        deliveryId: 'f0000000-0000-4000-8000-000000000001',
        event: 'job.completed',
        attempt: 1,
        url: 'https://example.org/hook',
        ok: false,
        httpStatus: 503,
        error: null,
        durationMs: 12,
        nextAttemptAt: '2026-11-01T09:05:01.000Z',
      }),
    ]);
    await spec.thenRows('job_status', 'job_id', [
      {
        state: 'done',
        pages_done: 3,
        current_step: null,
        finished_at: '2026-11-01T09:05:00.000Z',
        archive_key: `jobs/${JOB}/result.zip`,
        archive_bytes: 1234,
        callback_state: 'retrying',
        callback_attempts: 1,
        callback_last_status: 503,
        callback_next_attempt_at: '2026-11-01T09:05:01.000Z',
      },
    ]);
    await spec.replayFromZero();
  });

  test('a cancelled job keeps its pages done and has no current step', async () => {
    await spec.given([
      queued(null),
      event('JobStarted', { startedAt: '2026-11-01T09:00:01.000Z' }),
      completed(2),
      event('JobCancelled', { cancelledAt: '2026-11-01T09:01:00.000Z', previousState: 'processing' }),
    ]);
    await spec.thenRows('job_status', 'job_id', [
      { state: 'cancelled', pages_done: 1, current_step: null, finished_at: '2026-11-01T09:01:00.000Z', callback_state: null },
    ]);
    await spec.replayFromZero();
  });
});
