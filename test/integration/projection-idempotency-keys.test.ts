// The idempotency_keys read model on its own: a submission with a key names its job; a later
// job with the same key of the same account takes the key over; other accounts and submissions
// without a key leave no row.
import { describe, test } from 'node:test';
import { idempotencyKeysProjection } from '../../projections/idempotency-keys.ts';
import { projectionSpec } from '../support/projection-spec.ts';

const spec = await projectionSpec(idempotencyKeysProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const B = 'b0000000-0000-4000-8000-000000000002';
const job = (n: number) => `d0000000-0000-4000-8000-00000000000${n}`;
const queued = (n: number, accountId: string, idempotency: { key: string; requestHash: string } | null, createdAt: string) => ({
  streamId: `job-${job(n)}`,
  type: 'JobQueued' as const,
  data: {
    jobId: job(n),
    accountId,
    keyId: null,
    pageCount: 1,
    pages: [{ pageNumber: 1, name: '1.png', blobKey: `jobs/${job(n)}/pages/0001.png`, sha256: 'ab', bytes: 1 }],
    options: { llmTier: 'cheap', preset: 'generic', pipelineSteps: ['layout', 'export'], pdfFormat: 'none', webhookUrl: null },
    uploadKey: `jobs/${job(n)}/upload.zip`,
    createdAt,
    expiresAt: '2026-12-01T00:00:00.000Z',
    idempotency,
  },
});

describe('idempotency_keys projection', () => {
  test('one row per account and key, taken over by the later job; no row without a key; replay from zero gives the same rows', async () => {
    await spec.given([
      queued(1, A, { key: 'batch-7', requestHash: 'h1' }, '2026-11-01T09:00:00.000Z'),
      queued(2, B, { key: 'batch-7', requestHash: 'h2' }, '2026-11-01T09:01:00.000Z'),
      queued(3, A, null, '2026-11-01T09:02:00.000Z'),
      queued(4, A, { key: 'batch-7', requestHash: 'h4' }, '2026-11-03T09:00:00.000Z'),
    ]);
    await spec.thenRows('idempotency_keys', 'account_id', [
      { account_id: A, idempotency_key: 'batch-7', request_hash: 'h4', job_id: job(4), created_at: '2026-11-03T09:00:00.000Z' },
      { account_id: B, idempotency_key: 'batch-7', request_hash: 'h2', job_id: job(2), created_at: '2026-11-01T09:01:00.000Z' },
    ]);
    await spec.replayFromZero();
  });
});
