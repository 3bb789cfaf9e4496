// A page slot that finishes a page fetches the next one at once (src/workers/start-workers.ts):
// the pages of a job are not paced by the poll interval, even where pg-boss's cached count of
// waiting tasks is stale (the supervisor counts them once an hour here). Before, a job that came to
// an idle service had each slot read one page per WORKER_POLL_SECONDS (docs/benchmarks.md, "Paced
// pages"): with a poll of 60 s, the third page of a slot would start a minute in.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline, type PageLog } from '../support/test-pipelines.ts';

const POLL_SECONDS = 60;
const processed: PageLog[] = [];
const runtime = await startTestRuntime(
  await testConfig(await createTestDatabase(), {
    WORKER_POLL_SECONDS: String(POLL_SECONDS),
    SUPERVISE_INTERVAL_SECONDS: '3600',
    WORKER_CONCURRENCY: '2',
  }),
  { page: testPagePipeline({ worker: 'w', stepMs: 20, processed }), export: testExportPipeline() },
);
after(() => runtime.stop());

test('two page slots read a 12-page job back to back, within one poll interval of its start', async () => {
  const jobId = await submitTestJob(runtime, await testAccount(runtime), 12);
  assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed'], (POLL_SECONDS - 10) * 1000), 'done');
  const { rows } = await runtime.db.pool.query<{ type: string; at: Date }>(
    `select type, recorded_at as at from events where stream_id = $1 and type in ('JobStarted', 'PageCompleted') order by stream_version`,
    [`job-${jobId}`],
  );
  const started = rows.find((row) => row.type === 'JobStarted')?.at.getTime() ?? Number.NaN;
  const completed = rows.filter((row) => row.type === 'PageCompleted').map((row) => row.at.getTime());
  assert.equal(completed.length, 12);
  // paced, a slot's second page would wait out the interval: every page would not be done within it
  assert.ok(Math.max(...completed) - started < POLL_SECONDS * 1000, `the last page completed ${Math.max(...completed) - started} ms in`);
  assert.equal(processed.filter((entry) => entry.jobId === jobId).length, 12);
});
