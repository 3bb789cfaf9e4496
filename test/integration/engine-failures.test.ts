import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const config = await testConfig(await createTestDatabase(), { PAGE_RETRY_LIMIT: '1' });
const runtime = await startTestRuntime(config, {
  page: testPagePipeline({ worker: 'w', stepMs: 5, failPages: [3], flakyPages: [2] }),
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
    assert.equal((await runtime.db.pool.query('select * from billing where job_id = $1', [jobId])).rows.length, 0, 'failed jobs are not billed');
    const types = (await runtime.db.pool.query('select type from events where stream_id = $1 order by stream_version', [`job-${jobId}`])).rows.map((row) => row.type);
    assert.equal(types.filter((type) => type === 'JobFailed').length, 1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = (await runtime.db.pool.query('select type from events where stream_id = $1 order by stream_version', [`job-${jobId}`])).rows.map((row) => row.type);
    assert.equal(after.at(-1), 'JobFailed', 'no event follows a terminal one');
  });

  test('a page that fails once is retried and the job completes', async () => {
    const jobId = await submitTestJob(runtime, accountId, 2);
    assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'done');
  });
});
