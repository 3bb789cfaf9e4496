import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { startWorkerProcess as startWorkerProcess_, type WorkerProcess } from '../support/worker-processes.ts';
import { waitUntil } from '../support/wait.ts';

const databaseUrl = await createTestDatabase();
const config = await testConfig(databaseUrl, { WORKER_CONCURRENCY: '1' });
const api = await startTestRuntime(config);
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await api.stop();
});
const accountId = await testAccount(api);

function startWorkerProcess(stepMs: number, env: Record<string, string> = {}): WorkerProcess {
  return startWorkerProcess_({ DATABASE_URL: databaseUrl, DATA_DIR: config.dataDir, STEP_MS: String(stepMs), ...env }, children);
}

async function jobEvents(jobId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return (await api.db.pool.query('select type, data from events where stream_id = $1 order by stream_version', [`job-${jobId}`])).rows;
}

describe('worker crash and shutdown', () => {
  test('SIGKILL mid-page: after a restart the task is retried and the job completes exactly once', async () => {
    const first = startWorkerProcess(2000);
    await first.waitFor((line) => line === 'ready');
    const jobId = await submitTestJob(api, accountId, 3);
    const started = await first.waitFor((line) => line.startsWith(`page-start ${jobId}`));
    // Mid-page: its first step recorded (each step takes 2 s), then the worker is killed.
    const page = Number(started.split(' ')[2]);
    await waitUntil('the page in its first step', async () =>
      (await jobEvents(jobId)).some((event) => event.type === 'StepStarted' && event.data.page === page),
    );
    first.child.kill('SIGKILL');
    await first.exited;
    assert.equal((await jobEvents(jobId)).filter((event) => event.type === 'PageCompleted').length, 0, 'killed mid-page');

    const second = startWorkerProcess(10);
    assert.equal(await waitForJobState(api, jobId, ['done', 'failed'], 90_000), 'done');
    const events = await jobEvents(jobId);
    const types = events.map((event) => event.type);
    assert.equal(types.filter((type) => type === 'JobSucceeded').length, 1);
    assert.equal(types.filter((type) => type === 'JobStarted').length, 1);
    const completedPages = events.filter((event) => event.type === 'PageCompleted').map((event) => event.data.page);
    assert.deepEqual(completedPages.sort(), [1, 2, 3]);
    const steps = events.filter((event) => event.type === 'StepStarted').map((event) => `${event.data.page}:${event.data.step}`);
    assert.equal(new Set(steps).size, steps.length, `no duplicate step events: ${steps}`);
    const billing = (await api.db.pool.query('select pages from billing where job_id = $1', [jobId])).rows;
    assert.deepEqual(billing, [{ pages: 3 }]);
    second.child.kill('SIGTERM');
    await second.exited;
  });

  test('SIGTERM mid-page: a page that fits in the grace is finished before the worker exits 0', async () => {
    // 3 steps of 600 ms: the page ends well inside the 10 s grace.
    const worker = startWorkerProcess(600, { SHUTDOWN_GRACE_SECONDS: '10' });
    await worker.waitFor((line) => line === 'ready');
    const jobId = await submitTestJob(api, accountId, 1);
    await worker.waitFor((line) => line.startsWith(`page-start ${jobId}`));
    worker.child.kill('SIGTERM');
    assert.equal(await worker.exited, 0);
    assert.ok(worker.lines.includes('stopped'));
    const completed = (await jobEvents(jobId)).filter((event) => event.type === 'PageCompleted');
    assert.equal(completed.length, 1, 'the in-flight page was finished before exit');
  });

  test('SIGTERM with pages longer than the grace, PAGE_RETRY_LIMIT=0: tasks go back unspent, the job ends done after a restart, every page once', async () => {
    // Pages of 3 x 3 s against a 1 s grace, two at once, and no retries to spend: a shutdown
    // that counted as an attempt would fail the job.
    const graceMs = 1000;
    const settings = { SHUTDOWN_GRACE_SECONDS: String(graceMs / 1000), PAGE_RETRY_LIMIT: '0', WORKER_CONCURRENCY: '2' };
    const first = startWorkerProcess(3000, settings);
    await first.waitFor((line) => line === 'ready');
    const jobId = await submitTestJob(api, accountId, 3);
    const started = () => first.lines.filter((line) => line.startsWith(`page-start ${jobId} `)).length;
    await first.waitFor((line) => line.startsWith(`page-start ${jobId} `) && started() >= 2);
    const stopAt = Date.now();
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0, 'a shutdown is not a failure: exit 0');
    const stopMs = Date.now() - stopAt;
    // It waited the grace for the pages (they need 9 s), then handed them back and stopped:
    // 10 s of headroom for the hand-back and the stop on a loaded machine.
    assert.ok(stopMs >= graceMs - 50 && stopMs < graceMs + 10_000, `stopped ${stopMs} ms after SIGTERM with a ${graceMs} ms grace`);
    let events = await jobEvents(jobId);
    assert.equal(events.filter((event) => event.type === 'JobFailed').length, 0, 'no failure recorded');
    assert.equal(events.filter((event) => event.type === 'PageCompleted').length, 0, 'no page could finish in the grace');
    const tasks = (
      await api.db.pool.query(`select state, retry_count from pgboss.job where name = 'hwr-page' and data->>'jobId' = $1`, [jobId])
    ).rows;
    assert.deepEqual(
      tasks.map((task) => `${task.state}:${task.retry_count}`).sort(),
      ['created:0', 'created:0', 'created:0'],
      'handed back, no attempt spent',
    );

    const second = startWorkerProcess(10, settings);
    assert.equal(await waitForJobState(api, jobId, ['done', 'failed'], 60_000), 'done');
    events = await jobEvents(jobId);
    assert.deepEqual(
      events
        .filter((event) => event.type === 'PageCompleted')
        .map((event) => event.data.page)
        .sort(),
      [1, 2, 3],
      'every page once',
    );
    assert.equal(events.filter((event) => event.type === 'JobSucceeded').length, 1);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });
});
