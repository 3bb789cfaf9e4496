// Every job ends: a worker lost on a task's last attempt (a real child process, SIGKILL) fails
// the job through the dead-letter queue, with one JobFailed naming the page and why, then the
// job.failed callback, nothing billed; the sweep fails a job whose task is gone, once.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import type { JobWithMetadata } from 'pg-boss';
import { CALLBACK_MAX_ATTEMPTS } from '../../domain/job-decide.ts';
import { failJob } from '../../src/workers/tasks/page-worker.ts';
import { createCallbackHandler } from '../../src/workers/tasks/callback-worker.ts';
import { createLostCallbackHandler, sweepStrandedJobs } from '../../src/workers/sweeps/lost-tasks.ts';
import type { CallbackTaskData } from '../../src/queue/queues.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { startWorkerProcess } from '../support/worker-processes.ts';
import { waitUntil } from '../support/wait.ts';

const databaseUrl = await createTestDatabase();
const config = await testConfig(databaseUrl, { PAGE_RETRY_LIMIT: '1' });
const api = await startTestRuntime(config);
const children: ChildProcess[] = [];

// The client's webhook receiver.
const received: Array<{ event: string; body: Record<string, unknown> }> = [];
const receiver = http.createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk));
  request.on('end', () => {
    received.push({ event: String(request.headers['x-svc-event'] ?? ''), body: JSON.parse(body) });
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  receiver.close();
  await api.stop();
});
const accountId = await testAccount(api);

const worker = (stepMs: number) =>
  startWorkerProcess(
    {
      DATABASE_URL: databaseUrl,
      DATA_DIR: config.dataDir,
      STEP_MS: String(stepMs),
      PAGE_RETRY_LIMIT: '1',
      TASK_HEARTBEAT_SECONDS: '10',
      WEBHOOK_ALLOW_HTTP: '1',
      WEBHOOK_ALLOW_PRIVATE: '1',
      CALLBACK_RETRY_SCALE: '0.01',
    },
    children,
  );

async function jobEvents(jobId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return (await api.db.pool.query('select type, data from events where stream_id = $1 order by stream_version', [`job-${jobId}`])).rows;
}

describe('lost workers', () => {
  test('a worker SIGKILLed on every attempt of a page: the job ends failed, one JobFailed naming the page, the job.failed callback, nothing billed', async () => {
    const jobId = await submitTestJob(api, accountId, 1, { webhookUrl });
    const started = Date.now();
    // Attempt 1 and attempt 2 (PAGE_RETRY_LIMIT=1), each on a worker killed mid-page.
    for (let attempt = 1; attempt <= 2; attempt++) {
      const doomed = worker(5000);
      await doomed.waitFor((line) => line === `page-start ${jobId} 1`, 60_000);
      doomed.child.kill('SIGKILL');
      await doomed.exited;
    }
    // A healthy worker: its supervisor finds the lapsed heartbeat, pg-boss dead-letters the task.
    const healthy = worker(10);
    assert.equal(await waitForJobState(api, jobId, ['done', 'failed'], 60_000), 'failed');
    const elapsed = Date.now() - started;
    const status = (await api.db.pool.query('select error_message from job_status where job_id = $1', [jobId])).rows[0];
    assert.equal(status.error_message, 'page 1 (1.png): worker lost after 2 attempts (its heartbeat lapsed)');
    const deadline = Date.now() + 30_000;
    while (!received.some((callback) => callback.body.job_id === jobId) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const callbacks = received.filter((callback) => callback.body.job_id === jobId);
    assert.equal(callbacks.length, 1, 'one callback');
    assert.equal(callbacks[0].body.event, 'job.failed');
    assert.equal(callbacks[0].body.error_message, status.error_message);

    // Idempotent: the sweep finds nothing left to do.
    assert.deepEqual(await sweepStrandedJobs({ bus: api.bus, log: api.log }), []);
    // Once every task of the job has ended (its dead letters and callback too), nothing more can be appended for it.
    await waitUntil('every task of the job ended', async () => {
      const pending = await api.db.pool.query(
        `select 1 from pgboss.job where data->>'jobId' = $1 and state in ('created', 'retry', 'active')`,
        [jobId],
      );
      return pending.rows.length === 0;
    });
    const types = (await jobEvents(jobId)).map((event) => event.type);
    assert.equal(types.filter((type) => type === 'JobFailed').length, 1, types.join(' '));
    assert.equal(types.filter((type) => type === 'PageCompleted' || type === 'JobSucceeded').length, 0);
    assert.equal((await api.db.pool.query('select * from billing where job_id = $1', [jobId])).rows.length, 0, 'nothing billed');
    healthy.child.kill('SIGTERM');
    assert.equal(await healthy.exited, 0);
    process.stderr.write(`# lost worker: job failed ${elapsed} ms after submission (two kills, heartbeat 10 s)\n`);
  });

  test('the sweep fails a job whose page task is gone, once, and leaves running jobs alone', async () => {
    const stranded = await submitTestJob(api, accountId, 2);
    const healthy = await submitTestJob(api, accountId, 1);
    // No worker runs here. Page 2's task vanishes (as if its dead-letter copy had failed too).
    await api.db.pool.query(
      `update pgboss.job set state = 'failed', output = '{"value":{"message":"job heartbeat timeout"}}' where name = 'hwr-page' and data->>'jobId' = $1 and data->>'page' = '2'`,
      [stranded],
    );
    assert.deepEqual(await sweepStrandedJobs({ bus: api.bus, log: api.log }), [stranded]);
    assert.deepEqual(await sweepStrandedJobs({ bus: api.bus, log: api.log }), []);
    const status = (
      await api.db.pool.query('select job_id, state, error_message from job_status where job_id = any($1)', [[stranded, healthy]])
    ).rows;
    assert.deepEqual(Object.fromEntries(status.map((row) => [row.job_id, `${row.state}: ${row.error_message}`])), {
      [stranded]: 'failed: page 2 (2.png): worker lost after 1 attempt (its heartbeat lapsed)',
      [healthy]: 'queued: null',
    });
    assert.equal((await jobEvents(stranded)).filter((event) => event.type === 'JobFailed').length, 1);
  });

  test('an export task past TASK_EXPIRE_SECONDS on its last attempt fails the job, naming the export', async () => {
    // Workers in this process; the export never ends (it ignores its abort signal, as a stuck
    // library call would), PAGE_RETRY_LIMIT=0 and the shortest expiry.
    const stuckConfig = await testConfig(await createTestDatabase(), { PAGE_RETRY_LIMIT: '0', TASK_EXPIRE_SECONDS: '10' });
    const stuck = await startTestRuntime(stuckConfig, {
      page: testPagePipeline({ worker: 'w', stepMs: 5 }),
      export: { ...testExportPipeline(), exportJob: () => new Promise(() => {}) },
    });
    try {
      const account = await testAccount(stuck);
      const jobId = await submitTestJob(stuck, account, 2);
      assert.equal(await waitForJobState(stuck, jobId, ['done', 'failed'], 60_000), 'failed');
      const status = (await stuck.db.pool.query('select error_message from job_status where job_id = $1', [jobId])).rows[0];
      assert.match(
        status.error_message,
        /^export: (worker lost after 1 attempt \(the task ran past its expiry\)|failed after 1 attempt: handler execution exceeded)/,
      );
      const types = (await stuck.db.pool.query('select type from events where stream_id = $1', [`job-${jobId}`])).rows.map(
        (row) => row.type,
      );
      assert.equal(types.filter((type) => type === 'JobFailed').length, 1);
    } finally {
      await stuck.stopWorkers(0);
      await stuck.stop();
    }
  });

  test('a callback task that runs out of tries records a failed attempt; the delivery goes on and the last one ends abandoned', async () => {
    const jobId = await submitTestJob(api, accountId, 1, { webhookUrl });
    await failJob(api.bus, jobId, 'page 1 (1.png): test', 1, 'test');
    const lost = createLostCallbackHandler({ bus: api.bus, config: api.config, log: api.log });
    const task = (attempt: number) =>
      ({
        id: `lost-${attempt}`,
        data: { jobId, attempt },
        sourceRetryCount: 3,
        sourceOutput: { value: { message: 'job timed out' } },
      }) as unknown as JobWithMetadata<CallbackTaskData>;
    await lost(task(1));
    await lost(task(1)); // a second delivery of the same dead letter records nothing
    let row = (await api.db.pool.query('select callback_state, callback_attempts from job_status where job_id = $1', [jobId])).rows[0];
    assert.deepEqual(row, { callback_state: 'retrying', callback_attempts: 1 });
    for (let attempt = 2; attempt <= CALLBACK_MAX_ATTEMPTS; attempt++) await lost(task(attempt));
    row = (await api.db.pool.query('select callback_state, callback_attempts from job_status where job_id = $1', [jobId])).rows[0];
    assert.deepEqual(row, { callback_state: 'abandoned', callback_attempts: CALLBACK_MAX_ATTEMPTS });
    const events = await jobEvents(jobId);
    assert.equal(events.filter((event) => event.type === 'CallbackAbandoned').length, 1);
    const first = events.find((event) => event.type === 'CallbackAttempted');
    assert.equal(first?.data.error, 'callback task worker lost after 4 attempts (the task ran past its expiry)');
  });

  test('an account without a webhook secret: the callback is never sent signed with an empty key; the attempt fails', async () => {
    const jobId = await submitTestJob(api, accountId, 1, { webhookUrl });
    await failJob(api.bus, jobId, 'page 1 (1.png): test', 1, 'test');
    await api.db.pool.query('delete from account_secrets where account_id = $1', [accountId]);
    const config = { ...api.config, callbacks: { ...api.config.callbacks, allowHttp: true, allowPrivate: true } };
    const send = createCallbackHandler({ bus: api.bus, config, log: api.log });
    await send({ id: 'cb-1', data: { jobId, attempt: 1 } } as unknown as Parameters<typeof send>[0]);
    assert.equal(received.filter((callback) => callback.body.job_id === jobId).length, 0, 'nothing sent');
    const attempt = (await jobEvents(jobId)).find((event) => event.type === 'CallbackAttempted');
    assert.equal(attempt?.data.ok, false);
    assert.equal(attempt?.data.error, 'the account has no webhook secret: not sent unsigned');
  });
});
