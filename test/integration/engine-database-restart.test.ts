// A database restart in the middle of a job loses nothing: the workers ride out the outage, the
// interrupted pages run again once the database answers, in the same attempt, and the job
// completes exactly once. PAGE_RETRY_LIMIT=0: a restart must not spend a page's attempt (it did,
// and this test raised the limit to 3 to pass; with 0 the job failed, "worker lost after 1 attempt").
// The outage is made to hit a page: page 3 is held between its first two steps while the
// database stops, then let go, so its next step is refused for certain (not by luck of timing).
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { jobStreamId } from '../../domain/events.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded-postgres.ts';
import { outageOf } from '../../src/outage/outage.ts';
import { pageTaskId, QUEUES } from '../../src/queue/queues.ts';
import {
  assertCompletedOnce,
  assertNoAttemptSpent,
  startTestRuntime,
  submitTestJob,
  testAccount,
  testConfig,
  waitForJobState,
} from '../support/engine.ts';
import { testExportPipeline, testPagePipeline, type PagePoint } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const HELD_PAGE = 3;
/** Runs of each page's pipeline (a run again after the outage counts twice). */
const runs = new Map<number, number>();
const refused: Array<{ page: number; at: PagePoint; error: unknown }> = [];
let held = false;
const release = Promise.withResolvers<void>();

const clusterDir = path.join(os.tmpdir(), `hwr-restart-${process.pid}`);
const port = await freePort();
let database: EmbeddedDatabase = await startEmbeddedPostgres({ dataDir: clusterDir, port });
// A task waits for the database as long as the heartbeat (TASK_HEARTBEAT_SECONDS): 30 s leaves a
// loaded machine ample time to start PostgreSQL again.
const config = await testConfig(database.url, { WORKER_CONCURRENCY: '2', PAGE_RETRY_LIMIT: '0', TASK_HEARTBEAT_SECONDS: '30' });
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
  await runtime.stop().catch(() => {});
  await database.stop();
  await rm(clusterDir, { recursive: true, force: true });
});

test('PostgreSQL restarted under a page in flight: its refused step runs again in the same attempt; the job completes, every page once, no attempt spent', async () => {
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 6);
  await waitUntil('page 3 held between its steps', () => held);

  // In flight at the stop: its task active, its first step recorded, the page not completed.
  const page3 = await runtime.db.pool.query<{ type: string; step: string | null }>(
    `select type, data->>'step' as step from events where stream_id = $1 and page = $2 order by stream_version`,
    [jobStreamId(jobId), HELD_PAGE],
  );
  assert.deepEqual(
    page3.rows.map((row) => `${row.type}:${row.step}`),
    ['StepStarted:layout'],
  );
  const task = await runtime.db.pool.query<{ state: string }>('select state from pgboss.job where name = $1 and id = $2', [
    QUEUES.page,
    pageTaskId(jobId, HELD_PAGE),
  ]);
  assert.equal(task.rows[0].state, 'active');

  await database.stop();
  release.resolve();
  // Its next step is refused: the database is away.
  const hit = await waitUntil('page 3 to have its step refused', () => refused.find((entry) => entry.page === HELD_PAGE));
  assert.equal(hit.at, 'recognition');
  assert.equal(outageOf(hit.error), 'database', String(hit.error));
  database = await startEmbeddedPostgres({ dataDir: clusterDir, port });
  assert.equal(database.owned, true);

  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], 120_000), 'done');
  await assertCompletedOnce(runtime, jobId, 6);
  await assertNoAttemptSpent(runtime, jobId, 6);
  // The refused page ran again (within its one attempt: none was spent).
  assert.ok((runs.get(HELD_PAGE) ?? 0) >= 2, `page 3 ran ${runs.get(HELD_PAGE)} times`);
});
