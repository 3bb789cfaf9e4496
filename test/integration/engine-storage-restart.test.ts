// The object store restarted in the middle of a job loses nothing: a page task whose blob reads or
// writes are refused waits for the store and runs the page again in the same attempt, and the job
// completes exactly once with no attempt spent (PAGE_RETRY_LIMIT=0: before, the first refused
// read failed the page, and with it the job) and no page counted as failed.
// The outage is made to hit a page: page 3 is held before it reads its image while the store
// goes away, then let go, so its read is refused for certain (not by luck of timing).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { jobStreamId } from '../../domain/events.ts';
import { pagesFailed } from '../../src/metrics/metrics.ts';
import { outageOf } from '../../src/outage/outage.ts';
import { pageTaskId, QUEUES } from '../../src/queue/queues.ts';
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
import { testExportPipeline, testPagePipeline, type PagePoint } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const HELD_PAGE = 3;
/** Runs of each page's pipeline (a run again after the outage counts twice). */
const runs = new Map<number, number>();
const refused: Array<{ page: number; at: PagePoint; error: unknown }> = [];
let held = false;
const release = Promise.withResolvers<void>();

const s3 = await startTestS3Server();
// A task waits for the store as long as the heartbeat (TASK_HEARTBEAT_SECONDS): 30 s, ample on a loaded machine.
const config = await testConfig(await createTestDatabase(), {
  ...s3.env('restart'),
  WORKER_CONCURRENCY: '2',
  PAGE_RETRY_LIMIT: '0',
  TASK_HEARTBEAT_SECONDS: '30',
});
const runtime = await startTestRuntime(config, {
  page: testPagePipeline({
    worker: 'w',
    stepMs: 300,
    onPageStart: (task) => runs.set(task.page.pageNumber, (runs.get(task.page.pageNumber) ?? 0) + 1),
    // Page 3, on its first run, waits before it reads its image until the test lets it go.
    pause: async (task, at) => {
      if (task.page.pageNumber !== HELD_PAGE || at !== 'read' || runs.get(HELD_PAGE) !== 1) return;
      held = true;
      await release.promise;
    },
    onError: (task, at, error) => refused.push({ page: task.page.pageNumber, at, error }),
  }),
  export: testExportPipeline(),
});
after(() => {
  release.resolve();
  return runtime.stop();
});

test('the object store restarted under a page in flight: its refused read runs again in the same attempt; the job completes, every page once, no attempt spent', async () => {
  const failedBefore = (await pagesFailed.get()).values.reduce((sum, value) => sum + value.value, 0);
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 8);
  await waitUntil('page 3 held before its read', () => held);

  // In flight at the stop: its task active, the page not completed.
  const completed = await runtime.db.pool.query('select 1 from events where stream_id = $1 and page = $2 and type = $3', [
    jobStreamId(jobId),
    HELD_PAGE,
    'PageCompleted',
  ]);
  assert.equal(completed.rows.length, 0);
  const task = await runtime.db.pool.query<{ state: string }>('select state from pgboss.job where name = $1 and id = $2', [
    QUEUES.page,
    pageTaskId(jobId, HELD_PAGE),
  ]);
  assert.equal(task.rows[0].state, 'active');

  await s3.pause();
  release.resolve();
  // Its read is refused: the store is away.
  const hit = await waitUntil('page 3 to have its read refused', () => refused.find((entry) => entry.page === HELD_PAGE));
  assert.equal(hit.at, 'read');
  assert.equal(outageOf(hit.error), 'storage', String(hit.error));
  await s3.resume();

  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], 120_000), 'done');
  await assertCompletedOnce(runtime, jobId, 8);
  await assertNoAttemptSpent(runtime, jobId, 8);
  // The refused page ran again (within its one attempt: none was spent).
  assert.ok((runs.get(HELD_PAGE) ?? 0) >= 2, `page 3 ran ${runs.get(HELD_PAGE)} times`);
  const failedAfter = (await pagesFailed.get()).values.reduce((sum, value) => sum + value.value, 0);
  assert.equal(failedAfter, failedBefore, 'hwr_pages_failed_total did not count the outage');
});
