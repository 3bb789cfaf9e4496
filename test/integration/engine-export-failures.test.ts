// Export failures through the real engine and workers: a stored file that is there but broken
// fails the job at the first export attempt (its code is permanent, src/export/errors.ts) instead
// of after PAGE_RETRY_LIMIT retries that fail the same way. The export pipeline is the real one;
// the pages come from the test page pipeline (which reads only an image's header), the broken
// one a real PNG cut short: its header reads, its pixels do not.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { exportTaskId } from '../../src/queue/queues.ts';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { exportsFailed } from '../../src/metrics/metrics.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, TEST_PAGE_PNG, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testPagePipeline } from '../support/test-pipelines.ts';

const config = await testConfig(await createTestDatabase(), { PAGE_RETRY_LIMIT: '2' });
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'w', stepMs: 5 }), export: createExportPipeline() });
after(() => runtime.stop());
const accountId = await testAccount(runtime);

async function exportAttempts(jobId: string): Promise<number> {
  const result = await runtime.db.pool.query<{ retry_count: number }>('select retry_count from pgboss.job where id = $1', [
    exportTaskId(jobId),
  ]);
  return result.rows[0].retry_count + 1;
}

async function errorMessage(jobId: string): Promise<string> {
  return (await runtime.db.pool.query('select error_message from job_status where job_id = $1', [jobId])).rows[0].error_message;
}

async function exportFailures(): Promise<Record<string, number>> {
  const metric = await exportsFailed.get();
  return Object.fromEntries(metric.values.map((sample) => [String(sample.labels.outcome), sample.value]));
}

test('a page image the PDF cannot read (image_unsupported) fails the job at the first export attempt', async () => {
  const before = await exportFailures();
  const jobId = await submitTestJob(runtime, accountId, 1, {}, { image: TEST_PAGE_PNG.subarray(0, 1000) });
  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'failed');
  assert.match(await errorMessage(jobId), /^export: page 1: the page image cannot be embedded [\s\S]*\(image_unsupported\)$/);
  assert.equal(await exportAttempts(jobId), 1, 'not retried: it fails the same way every time');
  const after = await exportFailures();
  assert.deepEqual(
    { retried: after.retried - before.retried, job_failed: after.job_failed - before.job_failed },
    { retried: 0, job_failed: 1 },
    'hwr_exports_failed_total counts the attempt, as failing the job',
  );
});
