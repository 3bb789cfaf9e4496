import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';

const databaseUrl = await createTestDatabase();
const config = await testConfig(databaseUrl, { WORKER_CONCURRENCY: '1' });
const api = await startTestRuntime(config);
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await api.stop();
});
const accountId = await testAccount(api);

interface WorkerProcess {
  child: ChildProcess;
  lines: string[];
  waitFor(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

function startWorkerProcess(stepMs: number): WorkerProcess {
  const child = spawn(process.execPath, [path.resolve(import.meta.dirname, '../support/worker-process.ts')], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      DATA_DIR: config.dataDir,
      LOG_LEVEL: 'silent',
      WORKER_CONCURRENCY: '1',
      WORKER_POLL_SECONDS: '0.5',
      TASK_HEARTBEAT_SECONDS: '10',
      SUPERVISE_INTERVAL_SECONDS: '1',
      PAGE_RETRY_LIMIT: '2',
      STEP_MS: String(stepMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines: string[] = [];
  const waiters: Array<{ predicate: (line: string) => boolean; resolve: (line: string) => void }> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    waitFor: (predicate, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const found = lines.find(predicate);
        if (found) return resolve(found);
        const timer = setTimeout(() => reject(new Error(`worker did not print the expected line; got ${lines.join(' | ')}`)), timeoutMs);
        waiters.push({ predicate, resolve: (line) => (clearTimeout(timer), resolve(line)) });
      }),
  };
}

async function jobEvents(jobId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return (await api.db.pool.query('select type, data from events where stream_id = $1 order by stream_version', [`job-${jobId}`])).rows;
}

describe('worker crash and shutdown', () => {
  test('SIGKILL mid-page: after a restart the task is retried and the job completes exactly once', async () => {
    const first = startWorkerProcess(2000);
    await first.waitFor((line) => line === 'ready');
    const jobId = await submitTestJob(api, accountId, 3);
    await first.waitFor((line) => line.startsWith(`page-start ${jobId}`));
    await new Promise((resolve) => setTimeout(resolve, 700));
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

  test('SIGTERM mid-page: the worker finishes its page, then exits cleanly', async () => {
    const worker = startWorkerProcess(600);
    await worker.waitFor((line) => line === 'ready');
    const jobId = await submitTestJob(api, accountId, 1);
    await worker.waitFor((line) => line.startsWith(`page-start ${jobId}`));
    worker.child.kill('SIGTERM');
    assert.equal(await worker.exited, 0);
    assert.ok(worker.lines.includes('stopped'));
    const completed = (await jobEvents(jobId)).filter((event) => event.type === 'PageCompleted');
    assert.equal(completed.length, 1, 'the in-flight page was finished before exit');
  });
});
