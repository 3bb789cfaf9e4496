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

// Without workers: the page tasks stay where submission put them.
const direct = await startTestRuntime(await testConfig(await createTestDatabase()));
// Two pages at once, as on a small machine, each a few tens of milliseconds.
const processed: PageLog[] = [];
const workers = await startTestRuntime(await testConfig(await createTestDatabase(), { WORKER_CONCURRENCY: '2' }), {
  page: testPagePipeline({ worker: 'w', processed, stepMs: 10 }),
  export: testExportPipeline(),
});
after(async () => {
  await workers.stop();
  await direct.stop();
});

async function priorities(runtime: Runtime, jobId: string, pageCount: number): Promise<number[]> {
  const ids = Array.from({ length: pageCount }, (_, i) => pageTaskId(jobId, i + 1));
  const result = await runtime.db.pool.query<{ id: string; priority: number }>(
    'select id, priority from pgboss.job where name = $1 and id = any($2::uuid[])',
    [QUEUES.page, ids],
  );
  const byId = new Map(result.rows.map((row) => [row.id, row.priority]));
  return ids.map((id) => byId.get(id)!);
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
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

  test('a 1-page job of one account finishes while another account’s 200-page job has done few of its pages', async (t) => {
    const big = await submitTestJob(workers, await testAccount(workers), 200);
    const bigDone = () => processed.filter((entry) => entry.jobId === big).length;
    await until(() => bigDone() >= 6, 'the large job is under way');
    const smallAccount = await testAccount(workers);
    const small = await submitTestJob(workers, smallAccount, 1);
    // Counted once the small job's task is in the queue.
    const doneAtSubmit = bigDone();
    await until(() => processed.some((entry) => entry.jobId === small), 'the small job’s page ran', 120_000);
    const doneWhenSmallRan = bigDone();
    assert.equal(await waitForJobState(workers, small, ['done', 'failed'], 60_000), 'done');
    const doneWhenSmallFinished = bigDone();
    t.diagnostic(
      `large job's pages done: ${doneAtSubmit} at the small job's submission, ${doneWhenSmallRan} when its page ran, ${doneWhenSmallFinished} when it was done`,
    );
    // The small page waited for the pages already running (2) and at most a few fetched beside it,
    // not for the 190-odd pages of the large job still queued.
    assert.ok(
      doneWhenSmallRan - doneAtSubmit <= 6,
      `the small job's page ran after ${doneWhenSmallRan - doneAtSubmit} more pages of the large job (${doneAtSubmit} at its submission)`,
    );
    assert.ok(doneWhenSmallFinished < 100, `the small job finished when the large one had done ${doneWhenSmallFinished} of 200 pages`);
    assert.equal(await waitForJobState(workers, big, ['done', 'failed'], 180_000), 'done');
  });

  test('two large jobs of two accounts alternate page by page', async (t) => {
    const first = await submitTestJob(workers, await testAccount(workers), 40);
    await until(() => processed.filter((entry) => entry.jobId === first).length >= 4, 'the first job is under way');
    const second = await submitTestJob(workers, await testAccount(workers), 40);
    const start = processed.length;
    await until(() => processed.length - start >= 30, 'thirty more pages ran', 120_000);
    const window = processed.slice(start, start + 30);
    const ofSecond = window.filter((entry) => entry.jobId === second).length;
    t.diagnostic(
      `order of the 30 pages after the second submission: ${window.map((entry) => (entry.jobId === second ? 'B' : 'A')).join('')}`,
    );
    // Round robin gives the second job half the pages after the few already fetched for the first.
    assert.ok(ofSecond >= 12 && ofSecond <= 18, `${ofSecond} of the 30 pages after the second submission were the second job's`);
    for (const jobId of [first, second]) assert.equal(await waitForJobState(workers, jobId, ['done', 'failed'], 120_000), 'done');
  });
});
