// The object store restarted in the middle of a job loses nothing: a page task whose blob reads or
// writes are refused waits for the store and runs the page again in the same attempt, and the job
// completes exactly once with no attempt spent (PAGE_RETRY_LIMIT=0: before, the first refused
// read failed the page, and with it the job) and no page counted as failed.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { pagesFailed } from '../../src/metrics/metrics.ts';
import { createTestDatabase } from '../support/database.ts';
import {
  assertCompletedOnce,
  assertNoAttemptSpent,
  startTestRuntime,
  submitTestJob,
  testAccount,
  testConfig,
  waitForJobState,
} from '../support/engine.ts';
import { startTestS3Server } from '../support/s3-server.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const s3 = await startTestS3Server();
const config = await testConfig(await createTestDatabase(), { ...s3.env('restart'), WORKER_CONCURRENCY: '2', PAGE_RETRY_LIMIT: '0' });
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'w', stepMs: 300 }), export: testExportPipeline() });
after(() => runtime.stop());

test('the object store restarted mid-job: the job still completes, with every page once and no attempt spent', async () => {
  const failedBefore = (await pagesFailed.get()).values.reduce((sum, value) => sum + value.value, 0);
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 8);
  await waitForJobState(runtime, jobId, ['processing']);

  await new Promise((resolve) => setTimeout(resolve, 500));
  await s3.pause();
  // Away for longer than a page takes (0.9 s), so that pages read and write while it is.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await s3.resume();

  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], 120_000), 'done');
  await assertCompletedOnce(runtime, jobId, 8);
  await assertNoAttemptSpent(runtime, jobId, 8);
  const failedAfter = (await pagesFailed.get()).values.reduce((sum, value) => sum + value.value, 0);
  assert.equal(failedAfter, failedBefore, 'hwr_pages_failed_total did not count the outage');
});
