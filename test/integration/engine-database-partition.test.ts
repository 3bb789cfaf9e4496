// The network cuts the database off in the middle of a job (a partition, a failover to another
// address): the connections open at that moment never answer again, with no error. The client
// gives up on their queries after DATABASE_QUERY_TIMEOUT_MS, the workers ride that out as a
// database outage on new connections, and once those get through the job completes exactly once,
// without spending a page's attempt (PAGE_RETRY_LIMIT=0). Before the query timeout the workers'
// queries waited for ever and the job hung.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { assertCompletedOnce, startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { startSilentProxy } from '../support/silent-proxy.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const url = await createTestDatabase();
const proxy = await startSilentProxy(url);
const config = await testConfig(proxy.url, {
  WORKER_CONCURRENCY: '2',
  PAGE_RETRY_LIMIT: '0',
  DATABASE_STATEMENT_TIMEOUT_MS: '1000',
  DATABASE_QUERY_TIMEOUT_MS: '2000',
  // The proxy keeps the server's end of a cut-off connection alive (its keepalives see the proxy):
  // a transaction cut off after taking its job stream's lock is ended by the server, as in production.
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '3000',
});
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'w', stepMs: 300 }), export: testExportPipeline() });
after(async () => {
  // The proxy first: its cut-off connections would hold the runtime's stop for its 5 s bound.
  await proxy.close();
  await runtime.stop().catch(() => {});
});

test('the database cut off mid-job for longer than the query timeout: the job still completes, with every page once', async () => {
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 6);
  await waitForJobState(runtime, jobId, ['processing']);

  proxy.partition();
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  proxy.heal();

  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], 120_000), 'done');
  await assertCompletedOnce(runtime, jobId, 6);
  // The connections that were cut off were given up and replaced.
  assert.ok(proxy.accepted() > config.workers.pageConcurrency, `${proxy.accepted()} connections accepted`);
});
