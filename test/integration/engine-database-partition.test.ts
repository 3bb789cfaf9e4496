// The network cuts the database off in the middle of a job (a partition, a failover to another
// address): the connections open at that moment never answer again, with no error. The client
// gives up on their queries after DATABASE_QUERY_TIMEOUT_MS, the workers ride that out as a
// database outage on new connections, and once those get through the job completes exactly once,
// without spending a page's attempt (PAGE_RETRY_LIMIT=0). Before the query timeout the workers'
// queries waited for ever and the job hung.
// The cut is made to hit a page: page 3 is held between its first two steps while the network
// cuts the database off, then let go, so its next step waits out the query timeout for certain.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { jobStreamId } from '../../domain/events.ts';
import { outageOf } from '../../src/outage/outage.ts';
import { createTestDatabase } from '../support/database.ts';
import { assertCompletedOnce, startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { startSilentProxy } from '../support/silent-proxy.ts';
import { testExportPipeline, testPagePipeline, type PagePoint } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const HELD_PAGE = 3;
/** Runs of each page's pipeline (a run again after the cut counts twice). */
const runs = new Map<number, number>();
const refused: Array<{ page: number; at: PagePoint; error: unknown }> = [];
let held = false;
const release = Promise.withResolvers<void>();

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
const runtime = await startTestRuntime(config, {
  page: testPagePipeline({
    worker: 'w',
    stepMs: 300,
    onPageStart: (task) => runs.set(task.page.pageNumber, (runs.get(task.page.pageNumber) ?? 0) + 1),
    // Page 3, on its first run, waits before its second step until the test lets it go.
    pause: async (task, at) => {
      if (task.page.pageNumber !== HELD_PAGE || at !== 'recognition' || runs.get(HELD_PAGE) !== 1) return;
      held = true;
      await release.promise;
    },
    onError: (task, at, error) => refused.push({ page: task.page.pageNumber, at, error }),
  }),
  export: testExportPipeline(),
});
after(async () => {
  release.resolve();
  // The proxy first: its cut-off connections would hold the runtime's stop for its 5 s bound.
  await proxy.close();
  await runtime.stop().catch(() => {});
});

test('the database cut off under a page in flight for longer than the query timeout: its step given up runs again; the job completes, every page once', async () => {
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 6);
  await waitUntil('page 3 held between its steps', () => held);
  const page3 = await runtime.db.pool.query<{ type: string }>('select type from events where stream_id = $1 and page = $2', [
    jobStreamId(jobId),
    HELD_PAGE,
  ]);
  assert.deepEqual(
    page3.rows.map((row) => row.type),
    ['StepStarted'],
    'page 3 in flight: its first step recorded, not completed',
  );

  proxy.partition();
  release.resolve();
  // Its next step gets no answer: given up after the query timeout (2 s), as the database being away.
  const hit = await waitUntil('page 3 to have its step given up', () => refused.find((entry) => entry.page === HELD_PAGE));
  assert.equal(hit.at, 'recognition');
  assert.equal(outageOf(hit.error), 'database', String(hit.error));
  proxy.heal();

  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], 120_000), 'done');
  await assertCompletedOnce(runtime, jobId, 6);
  // The connections that were cut off were given up and replaced.
  assert.ok(proxy.accepted() > config.workers.pageConcurrency, `${proxy.accepted()} connections accepted`);
  assert.ok((runs.get(HELD_PAGE) ?? 0) >= 2, `page 3 ran ${runs.get(HELD_PAGE)} times`);
});
