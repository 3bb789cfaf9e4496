// Fair scheduling between accounts (src/queue/fair-share.ts): page tasks carry priorities that
// make the pages of different accounts take turns, so one account's large job does not starve
// another account's small one. First the priorities as submitted, then the real engine.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { pageTaskId, QUEUES } from '../../src/queue/queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline, type PageLog } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

// Without workers: the page tasks stay where submission put them.
const direct = await startTestRuntime(await testConfig(await createTestDatabase()));
// Two pages at once, as on a small machine, each a few tens of milliseconds.
const CONCURRENCY = 2;
const processed: PageLog[] = [];
/**
 * While `holding`, a page that starts waits (before it reads its image) until `letGo()`: with both
 * worker slots held, nothing is fetched, so a test can submit a job into a queue that stands still.
 */
const gate = { holding: false, held: [] as Array<() => void> };
function letGo(): void {
  gate.holding = false;
  for (const go of gate.held.splice(0)) go();
}
const workers = await startTestRuntime(await testConfig(await createTestDatabase(), { WORKER_CONCURRENCY: String(CONCURRENCY) }), {
  page: testPagePipeline({
    worker: 'w',
    processed,
    stepMs: 10,
    pause: (_task, at) => (at === 'read' && gate.holding ? new Promise<void>((resolve) => gate.held.push(resolve)) : undefined),
  }),
  export: testExportPipeline(),
});
after(async () => {
  letGo();
  await workers.stop();
  await direct.stop();
});

/** The page tasks of `jobIds` in the order the workers fetched them (pg-boss's started_on). */
async function fetchOrder(runtime: Runtime, jobIds: string[]): Promise<Array<{ jobId: string; page: number }>> {
  const result = await runtime.db.pool.query<{ job_id: string; page: number }>(
    `select data->>'jobId' as job_id, (data->>'page')::int as page from pgboss.job
      where name = $1 and data->>'jobId' = any($2::text[]) and started_on is not null order by started_on, id`,
    [QUEUES.page, jobIds],
  );
  return result.rows.map((row) => ({ jobId: row.job_id, page: row.page }));
}

/** Holds both worker slots with pages of a job of `pageCount` pages just submitted; returns its id. */
async function submitHeld(accountId: string, pageCount: number): Promise<string> {
  gate.holding = true;
  const jobId = await submitTestJob(workers, accountId, pageCount);
  await waitUntil('both worker slots holding a page', () => gate.held.length === CONCURRENCY);
  return jobId;
}

async function priorities(runtime: Runtime, jobId: string, pageCount: number): Promise<number[]> {
  const ids = Array.from({ length: pageCount }, (_, i) => pageTaskId(jobId, i + 1));
  const result = await runtime.db.pool.query<{ id: string; priority: number }>(
    'select id, priority from pgboss.job where name = $1 and id = any($2::uuid[])',
    [QUEUES.page, ids],
  );
  const byId = new Map(result.rows.map((row) => [row.id, row.priority]));
  return ids.map((id) => byId.get(id)!);
}

describe('fair scheduling of page tasks between accounts', () => {
  test('each account’s pages take turns from the head of the queue; one account’s jobs follow each other', async () => {
    const [a, b, c] = [await testAccount(direct), await testAccount(direct), await testAccount(direct)];
    const bigA = await submitTestJob(direct, a, 10);
    assert.deepEqual(await priorities(direct, bigA, 10), [0, -1, -2, -3, -4, -5, -6, -7, -8, -9]);
    // Another account's one page joins the head of the queue: it runs right after A's first page.
    const smallB = await submitTestJob(direct, b, 1);
    assert.deepEqual(await priorities(direct, smallB, 1), [0]);
    // A's next job waits behind A's first; C's job takes turns with A's from the head.
    const nextA = await submitTestJob(direct, a, 3);
    assert.deepEqual(await priorities(direct, nextA, 3), [-10, -11, -12]);
    const jobC = await submitTestJob(direct, c, 3);
    assert.deepEqual(await priorities(direct, jobC, 3), [0, -1, -2]);
    // Once A's first pages have run, a newcomer starts at the head, not ahead of A's waiting pages.
    await direct.db.pool.query(`update pgboss.job set state = 'completed' where name = $1 and id = any($2::uuid[])`, [
      QUEUES.page,
      [1, 2, 3, 4].map((page) => pageTaskId(bigA, page)),
    ]);
    await direct.db.pool.query(`update pgboss.job set state = 'completed' where name = $1 and id = any($2::uuid[])`, [
      QUEUES.page,
      [pageTaskId(smallB, 1), pageTaskId(jobC, 1), pageTaskId(jobC, 2), pageTaskId(jobC, 3)],
    ]);
    const jobD = await submitTestJob(direct, await testAccount(direct), 2);
    assert.deepEqual(await priorities(direct, jobD, 2), [-4, -5]);
  });

  test('a 1-page job of one account runs right after the pages in flight, ahead of another account’s 200-page job, and finishes', async (t) => {
    const big = await submitHeld(await testAccount(workers), 200);
    const small = await submitTestJob(workers, await testAccount(workers), 1);
    letGo();
    assert.equal(await waitForJobState(workers, small, ['done', 'failed'], 60_000), 'done');
    t.diagnostic(`large job's pages done when the small one was: ${processed.filter((entry) => entry.jobId === big).length} of 200`);
    assert.equal(await waitForJobState(workers, big, ['done', 'failed'], 180_000), 'done');
    // Fetched after the two held pages: the small job's page within the next fetch of each slot
    // (the two slots fetch side by side), not after the 198 pages of the large job still queued.
    const order = await fetchOrder(workers, [big, small]);
    assert.deepEqual(
      order.slice(0, CONCURRENCY).map((task) => task.jobId),
      [big, big],
      'the held pages',
    );
    const at = order.findIndex((task) => task.jobId === small) - CONCURRENCY;
    assert.ok(at >= 0 && at <= CONCURRENCY - 1, `the small job's page was fetched after ${at} more pages of the large job`);
  });

  test('two large jobs of two accounts alternate page by page', async (t) => {
    const first = await submitHeld(await testAccount(workers), 40);
    const second = await submitTestJob(workers, await testAccount(workers), 40);
    letGo();
    for (const jobId of [first, second]) assert.equal(await waitForJobState(workers, jobId, ['done', 'failed'], 120_000), 'done');
    // The 30 fetches after the two held pages of the first job.
    const window = (await fetchOrder(workers, [first, second])).slice(CONCURRENCY, CONCURRENCY + 30);
    const letters = window.map((task) => (task.jobId === second ? 'B' : 'A')).join('');
    t.diagnostic(`order of the 30 pages fetched after the second submission: ${letters}`);
    // Round robin: ABAB… from the head of the queue. Two slots fetch side by side, so two
    // neighbours may swap: a run of at most two, and 15 ± 1 of the 30 at the window's edge.
    const ofSecond = window.filter((task) => task.jobId === second).length;
    assert.ok(
      ofSecond >= 14 && ofSecond <= 16,
      `${ofSecond} of the 30 pages after the second submission were the second job's: ${letters}`,
    );
    const longestRun = Math.max(...letters.match(/A+|B+/g)!.map((run) => run.length));
    assert.ok(longestRun <= CONCURRENCY, `a run of ${longestRun} pages of one job: ${letters}`);
  });
});
