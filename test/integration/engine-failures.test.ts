import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { correctionUsageReport } from '../../projections/correction-usage.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const config = await testConfig(await createTestDatabase(), { PAGE_RETRY_LIMIT: '1' });
const runtime = await startTestRuntime(config, {
  page: testPagePipeline({
    worker: 'w',
    stepMs: 5,
    failPages: [3],
    flakyPages: [2],
    correction: { provider: 'gemini', model: 'gemini-2.5-flash', refusedLines: [], inputTokens: 120, outputTokens: 30 },
  }),
  export: testExportPipeline(),
});
after(() => runtime.stop());
const accountId = await testAccount(runtime);

describe('page failures', () => {
  test('a page that fails after its retries fails the job, naming the page and the reason', async () => {
    const jobId = await submitTestJob(runtime, accountId, 4);
    assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'failed');
    const status = (await runtime.db.pool.query('select * from job_status where job_id = $1', [jobId])).rows[0];
    assert.match(status.error_message, /^page 3 \(3\.png\): the test pipeline cannot read this page/);
    assert.ok(status.finished_at);
    assert.equal(
      (await runtime.db.pool.query('select * from billing where job_id = $1', [jobId])).rows.length,
      0,
      'failed jobs are not billed',
    );
    const types = (
      await runtime.db.pool.query('select type from events where stream_id = $1 order by stream_version', [`job-${jobId}`])
    ).rows.map((row) => row.type);
    assert.equal(types.filter((type) => type === 'JobFailed').length, 1);
    // Once every task of the job has ended, nothing more can be appended for it.
    await waitUntil('every task of the job ended', async () => {
      const pending = await runtime.db.pool.query(
        `select 1 from pgboss.job where data->>'jobId' = $1 and state in ('created', 'retry', 'active')`,
        [jobId],
      );
      return pending.rows.length === 0;
    });
    const after = (
      await runtime.db.pool.query('select type from events where stream_id = $1 order by stream_version', [`job-${jobId}`])
    ).rows.map((row) => row.type);
    assert.equal(after.at(-1), 'JobFailed', 'no event follows a terminal one');
  });

  test('a page that fails once is retried and the job completes; correction usage is recorded per page', async () => {
    const jobId = await submitTestJob(runtime, accountId, 2);
    assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'done');
    const usage = await correctionUsageReport(runtime.db.pool, { accountId });
    const forJob = (
      await runtime.db.pool.query('select page_number, model, input_tokens from correction_usage where job_id = $1 order by page_number', [
        jobId,
      ])
    ).rows;
    assert.deepEqual(forJob, [
      { page_number: 1, model: 'gemini-2.5-flash', input_tokens: 120 },
      { page_number: 2, model: 'gemini-2.5-flash', input_tokens: 120 },
    ]);
    assert.equal(usage.length, 1);
    assert.ok(usage[0].pages >= 2);
    assert.equal(usage[0].input_tokens, usage[0].pages * 120);
    assert.equal(usage[0].output_tokens, usage[0].pages * 30);
  });
});
