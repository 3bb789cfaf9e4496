// Pages of one job run side by side: page commands decide from their own page's events and
// the job-level ones, so no page fails on another page's write, and the read a page command
// makes does not grow with the job.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { PROJECTION_DISPATCHER } from '../../src/store/install-projections.ts';
import { exportTaskId, QUEUES } from '../../src/queue/queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline, type PageLog } from '../support/test-pipelines.ts';

const processed: PageLog[] = [];
// No retries: a page attempt lost to a write conflict would fail the job.
const workers = await startTestRuntime(await testConfig(await createTestDatabase(), { WORKER_CONCURRENCY: '32', PAGE_RETRY_LIMIT: '0' }), {
  page: testPagePipeline({ worker: 'w', processed }),
  export: testExportPipeline(),
});
// A runtime without workers on a database of its own, for commands driven by the test itself.
const direct = await startTestRuntime(await testConfig(await createTestDatabase()));
after(async () => {
  await workers.stop();
  await direct.stop();
});
const accountId = await testAccount(direct);

async function jobEvents(runtime: Runtime, jobId: string): Promise<Array<{ type: string; data: { page?: number | null } }>> {
  const result = await runtime.db.pool.query('select type, data from events where stream_id = $1 order by stream_version', [
    `job-${jobId}`,
  ]);
  return result.rows;
}

async function exportTasks(jobId: string): Promise<number> {
  const result = await direct.db.pool.query<{ n: number }>('select count(*)::int as n from pgboss.job where name = $1 and id = $2', [
    QUEUES.export,
    exportTaskId(jobId),
  ]);
  return result.rows[0].n;
}

const completePage = (jobId: string, page: number) =>
  direct.bus.page(jobId, {
    type: 'CompletePage',
    page,
    resultKey: `r/${page}`,
    lineCount: 1,
    warnings: [],
    correction: null,
    now: new Date(),
  });

describe('pages of one job at once', () => {
  test('96 pages at 32 at once with no retries end done, every page completed once, in one ordered history', async () => {
    const jobId = await submitTestJob(workers, await testAccount(workers), 96);
    const end = await waitForJobState(workers, jobId, ['done', 'failed'], 120_000);
    const status = (await workers.db.pool.query('select error_message from job_status where job_id = $1', [jobId])).rows[0];
    assert.equal(end, 'done', status.error_message);
    const events = await jobEvents(workers, jobId);
    const completed = events.filter((event) => event.type === 'PageCompleted').map((event) => event.data.page);
    assert.deepEqual(
      completed.toSorted((a, b) => Number(a) - Number(b)),
      Array.from({ length: 96 }, (_, i) => i + 1),
    );
    assert.equal(events.filter((event) => event.type === 'JobStarted').length, 1);
    assert.equal(events.filter((event) => event.type === 'JobSucceeded').length, 1);
    assert.equal(events.filter((event) => event.type === 'JobFailed').length, 0);
    assert.equal(events.at(-1)?.type, 'JobSucceeded');
    assert.equal(processed.filter((entry) => entry.jobId === jobId).length, 96);
  });

  test('the last of many pages completed in the same instant schedules the export, and none before it', async () => {
    const jobId = await submitTestJob(direct, accountId, 40);
    await direct.bus.job(jobId, { type: 'StartJob', now: new Date() });
    await Promise.all(Array.from({ length: 39 }, (_, i) => completePage(jobId, i + 1)));
    assert.equal(await exportTasks(jobId), 0, 'no export while a page is missing');
    // The last page, twice at once (a retried task racing its first attempt): one completion.
    const results = await Promise.all([completePage(jobId, 40), completePage(jobId, 40)]);
    assert.equal(results.filter((result) => result.events.length > 0).length, 1);
    assert.equal(await exportTasks(jobId), 1);
    const events = await jobEvents(direct, jobId);
    assert.equal(events.filter((event) => event.type === 'PageCompleted').length, 40);
  });

  test('a page command sees the job-level facts and its own page, not the other pages', async () => {
    const jobId = await submitTestJob(direct, accountId, 5);
    await direct.bus.page(jobId, { type: 'StartStep', page: 2, step: 'layout', now: new Date() });
    await completePage(jobId, 1);
    await completePage(jobId, 3);
    const view = await direct.bus.loadPageView(direct.db.pool, jobId, 2);
    assert.ok(view);
    assert.equal(view.state.status, 'processing');
    assert.equal(view.state.pageCount, 5);
    assert.deepEqual(view.state.pageSteps, { 2: 'layout' });
    assert.deepEqual(view.state.completedPages, {});
    assert.equal(view.state.pages.find((page) => page.pageNumber === 2)?.name, '2.png');
    assert.equal(await direct.bus.loadPageView(direct.db.pool, '00000000-0000-4000-8000-000000000000', 1), null);
  });

  test('a cancel and page completions racing: nothing of a page is recorded after the cancel', async () => {
    const jobId = await submitTestJob(direct, accountId, 30);
    await direct.bus.job(jobId, { type: 'StartJob', now: new Date() });
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 15 }, (_, i) => completePage(jobId, i + 1)),
      direct.bus.job(jobId, { type: 'CancelJob', now: new Date() }),
      ...Array.from({ length: 15 }, (_, i) => completePage(jobId, i + 16)),
    ]);
    assert.equal(outcomes[15].status, 'fulfilled', 'the cancel is never refused by page traffic');
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') assert.equal((outcome.reason as { code?: string }).code, 'job_cancelled');
    }
    const types = (await jobEvents(direct, jobId)).map((event) => event.type);
    const cancelAt = types.indexOf('JobCancelled');
    assert.ok(cancelAt > 0);
    assert.deepEqual(types.slice(cancelAt + 1), []);
  });

  test('the store refuses a second completion of a page even from a command that skips the decider', async () => {
    const jobId = await submitTestJob(direct, accountId, 2);
    await direct.bus.job(jobId, { type: 'StartJob', now: new Date() });
    await completePage(jobId, 1);
    const duplicate = { type: 'PageCompleted', data: { page: 1, resultKey: 'r/1', lineCount: 1, warnings: [], correction: null } };
    await assert.rejects(
      direct.db.pool.query(`select * from hwr_append_to_stream($1, $2, null, $3, false, null, true)`, [
        PROJECTION_DISPATCHER,
        `job-${jobId}`,
        JSON.stringify([duplicate]),
      ]),
      /events_page_completed_once/,
    );
  });
});
