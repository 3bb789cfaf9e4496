// A database restart in the middle of a job loses nothing: the workers ride out the outage, the
// interrupted pages run again once the database answers, in the same attempt, and the job
// completes exactly once. PAGE_RETRY_LIMIT=0: a restart must not spend a page's attempt (it did,
// and this test raised the limit to 3 to pass; with 0 the job failed, "worker lost after 1 attempt").
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded-postgres.ts';
import {
  assertCompletedOnce,
  assertNoAttemptSpent,
  startTestRuntime,
  submitTestJob,
  testAccount,
  testConfig,
  waitForJobState,
} from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const clusterDir = path.join(os.tmpdir(), `hwr-restart-${process.pid}`);
const port = await freePort();
let database: EmbeddedDatabase = await startEmbeddedPostgres({ dataDir: clusterDir, port });
const config = await testConfig(database.url, { WORKER_CONCURRENCY: '2', PAGE_RETRY_LIMIT: '0' });
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'w', stepMs: 300 }), export: testExportPipeline() });
after(async () => {
  await runtime.stop().catch(() => {});
  await database.stop();
  await rm(clusterDir, { recursive: true, force: true });
});

test('PostgreSQL restarted mid-job: the job still completes, with every page once', async () => {
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 6);
  await waitForJobState(runtime, jobId, ['processing']);

  await database.stop();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  database = await startEmbeddedPostgres({ dataDir: clusterDir, port });
  assert.equal(database.owned, true);

  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], 120_000), 'done');
  await assertCompletedOnce(runtime, jobId, 6);
  await assertNoAttemptSpent(runtime, jobId, 6);
});
