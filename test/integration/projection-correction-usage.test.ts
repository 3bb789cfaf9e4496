// The correction_usage read model on its own: a row per corrected page, under the job's account.
import { describe, test } from 'node:test';
import { correctionUsageProjection } from '../../projections/correction-usage.ts';
import { projectionSpec, SPEC_RECORDED_AT } from '../support/projection-spec.ts';

const spec = await projectionSpec(correctionUsageProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const JOB = 'e0000000-0000-4000-8000-000000000002';

describe('correction_usage projection', () => {
  test('tokens and model of each corrected page, none for a page without correction; replay from zero gives the same rows', async () => {
    const usage = (input: number, output: number) => ({
      provider: 'gemini',
      model: 'flash-lite',
      inputTokens: input,
      outputTokens: output,
      refusedLines: 0,
    });
    await spec.given([
      {
        streamId: `job-${JOB}`,
        type: 'JobQueued',
        data: {
          jobId: JOB,
          accountId: A,
          keyId: null,
          pageCount: 3,
          pages: [],
          uploadKey: 'u',
          createdAt: SPEC_RECORDED_AT,
          expiresAt: SPEC_RECORDED_AT,
          idempotency: null,
          options: {
            llmTier: 'cheap',
            preset: 'generic',
            pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
            pdfFormat: 'none',
            webhookUrl: null,
          },
        },
      },
      {
        streamId: `job-${JOB}`,
        type: 'PageCompleted',
        data: { page: 1, resultKey: 'r/1', lineCount: 3, warnings: [], correction: usage(900, 120) },
      },
      { streamId: `job-${JOB}`, type: 'PageCompleted', data: { page: 2, resultKey: 'r/2', lineCount: 3, warnings: [], correction: null } },
      {
        streamId: `job-${JOB}`,
        type: 'PageCompleted',
        data: { page: 3, resultKey: 'r/3', lineCount: 3, warnings: [], correction: usage(700, 80) },
      },
    ]);
    await spec.thenRows('correction_usage', 'page_number', [
      {
        job_id: JOB,
        page_number: 1,
        account_id: A,
        provider: 'gemini',
        model: 'flash-lite',
        input_tokens: 900,
        output_tokens: 120,
        recorded_at: SPEC_RECORDED_AT,
      },
      {
        job_id: JOB,
        page_number: 3,
        account_id: A,
        provider: 'gemini',
        model: 'flash-lite',
        input_tokens: 700,
        output_tokens: 80,
        recorded_at: SPEC_RECORDED_AT,
      },
    ]);
    await spec.replayFromZero();
  });
});
