// The billing read model on its own: a row per done job with its pages; the correction tier only
// when a page's correction answer was applied; failed and cancelled jobs never get a row.
import { describe, test } from 'node:test';
import type { JobEvent } from '../../domain/events.ts';
import { billingProjection } from '../../projections/billing.ts';
import { type GivenEvent, projectionSpec } from '../support/projection-spec.ts';

const spec = await projectionSpec(billingProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const job = (n: number) => `e0000000-0000-4000-8000-00000000010${n}`;

function history(
  n: number,
  end: 'done' | 'failed' | 'cancelled',
  corrections: Array<'applied' | 'skipped' | 'legacy' | null>,
): GivenEvent[] {
  const streamId = `job-${job(n)}`;
  const events: JobEvent[] = [
    {
      type: 'JobQueued',
      data: {
        jobId: job(n),
        accountId: A,
        keyId: null,
        pageCount: corrections.length,
        pages: [],
        options: {
          llmTier: 'best',
          preset: 'generic',
          pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
          pdfFormat: 'none',
          webhookUrl: null,
        },
        uploadKey: 'u',
        createdAt: '2026-11-01T09:00:00.000Z',
        expiresAt: '2026-11-08T09:00:00.000Z',
        idempotency: null,
      },
    },
    { type: 'JobStarted', data: { startedAt: '2026-11-01T09:00:01.000Z' } },
    ...corrections.map(
      (outcome, index): JobEvent => ({
        type: 'PageCompleted',
        data: {
          page: index + 1,
          resultKey: `r/${index + 1}`,
          lineCount: 3,
          warnings: [],
          correction:
            outcome === null
              ? null
              : {
                  provider: 'gemini',
                  model: 'pro',
                  inputTokens: 10,
                  outputTokens: 5,
                  refusedLines: 0,
                  ...(outcome === 'legacy' ? {} : { outcome }),
                },
        } as never,
      }),
    ),
  ];
  if (end === 'done') {
    events.push({
      type: 'JobSucceeded',
      data: { finishedAt: `2026-11-01T09:0${n}:00.000Z`, archiveKey: 'a', archiveBytes: 1, archiveSha256: 'f', warningMessage: null },
    });
  } else if (end === 'failed') {
    events.push({ type: 'JobFailed', data: { finishedAt: '2026-11-01T09:05:00.000Z', errorMessage: 'page 1: broken', page: 1 } });
  } else {
    events.push({ type: 'JobCancelled', data: { cancelledAt: '2026-11-01T09:05:00.000Z', previousState: 'processing' } });
  }
  return events.map((event) => ({ streamId, type: event.type, data: event.data }));
}

describe('billing projection', () => {
  test('done jobs only; the tier when a correction was applied (or recorded before outcomes were), else none; replay from zero gives the same rows', async () => {
    await spec.given([
      ...history(1, 'done', ['applied', null, 'skipped']),
      ...history(2, 'done', [null, 'skipped']),
      ...history(3, 'done', ['legacy']),
      ...history(4, 'failed', ['applied']),
      ...history(5, 'cancelled', ['applied']),
    ]);
    await spec.thenRows('billing', 'job_id', [
      { job_id: job(1), account_id: A, pages: 3, tier: 'best', corrected_pages: 1, finished_at: '2026-11-01T09:01:00.000Z' },
      { job_id: job(2), account_id: A, pages: 2, tier: 'none', corrected_pages: 0, finished_at: '2026-11-01T09:02:00.000Z' },
      { job_id: job(3), account_id: A, pages: 1, tier: 'best', corrected_pages: 1, finished_at: '2026-11-01T09:03:00.000Z' },
    ]);
    await spec.replayFromZero();
  });
});
