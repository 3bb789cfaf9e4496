// Two machines, simulated: an API process and two worker processes (real child processes),
// each with its own DATA_DIR (no shared file system), against one PostgreSQL and one S3 server
// (test/support/s3-server.ts). A 20-page job submitted over HTTP completes; one worker is
// SIGKILLed while it holds pages, and the other finishes the job with every page once; the
// result comes from the bucket through a 302.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createApiKey, createAccount } from '../../src/use-cases/accounts.ts';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';
import { ApiClient, pagesZip, waitForState, type Auth } from '../support/http-client.ts';
import { startTestS3Server } from '../support/s3-server.ts';
import { startWorkerProcess } from '../support/worker-processes.ts';

const root = path.resolve(import.meta.dirname, '../..');
const s3 = await startTestS3Server();
const databaseUrl = await createTestDatabase();
const children: ChildProcess[] = [];
const machines: string[] = [];
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of machines) await rm(dir, { recursive: true, force: true });
});
const machineDir = async (name: string) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), `hwr-machine-${name}-`));
  machines.push(dir);
  return dir;
};

// The operator's side: an account and a key (as `hwr accounts create` / `hwr keys create` would),
// and the database read back for the checks. It stores no blobs.
const operator = await startTestRuntime(await testConfig(databaseUrl, {}, await machineDir('operator')));
after(() => operator.stop());
await createAccount(operator.bus, 'two-machines');
const auth: Auth = { key: (await createApiKey(operator.bus, 'two-machines', 'test')).key };

async function startApiProcess(dataDir: string): Promise<{ baseUrl: string; metricsUrl: string; output: () => string }> {
  const port = await freePort();
  const metricsPort = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), 'serve', '--role', 'api'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TMPDIR: process.env.TMPDIR,
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: baseUrl,
      LOG_LEVEL: 'info',
      METRICS_PORT: String(metricsPort),
      ...s3.env('two-machines'),
    },
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const deadline = Date.now() + 60_000;
  while (!output.includes('"hwr listening"')) {
    assert.equal(child.exitCode, null, `the API process exited: ${output}`);
    assert.ok(Date.now() < deadline, `the API process did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { baseUrl, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, output: () => output };
}

async function jobEvents(jobId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return (await operator.db.pool.query('select type, data from events where stream_id = $1 order by stream_version', [`job-${jobId}`]))
    .rows;
}

describe('two machines sharing only PostgreSQL and S3', () => {
  test('a 20-page job completes; a worker SIGKILLed mid-job leaves its pages to the other, every page once', async () => {
    const apiDir = await machineDir('api');
    const api = await startApiProcess(apiDir);
    const workerEnv = async (name: string) => ({
      DATABASE_URL: databaseUrl,
      DATA_DIR: await machineDir(name),
      STEP_MS: '250', // three steps: about 0.75 s a page
      WORKER_CONCURRENCY: '2',
      TASK_HEARTBEAT_SECONDS: '10',
      ...s3.env('two-machines'),
    });
    const first = startWorkerProcess(await workerEnv('worker-1'), children);
    const second = startWorkerProcess(await workerEnv('worker-2'), children);
    await Promise.all([first.waitFor((line) => line === 'ready', 60_000), second.waitFor((line) => line === 'ready', 60_000)]);

    const client = new ApiClient(api.baseUrl);
    const names = Array.from({ length: 20 }, (_, index) => `page-${String(index + 1).padStart(2, '0')}.jpg`);
    const submitted = await client.submit(await pagesZip(names), auth);
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const jobId: string = submitted.body.job_id;

    // Let the first worker take pages, then kill it while it holds some.
    const startedOnFirst = () =>
      first.lines.filter((line) => line.startsWith(`page-start ${jobId} `)).map((line) => Number(line.split(' ')[2]));
    const deadline = Date.now() + 60_000;
    while (startedOnFirst().length < 3) {
      assert.ok(Date.now() < deadline, 'the first worker took no pages');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    first.child.kill('SIGKILL');
    await first.exited;
    const completedAtKill = new Set(
      (await jobEvents(jobId)).filter((event) => event.type === 'PageCompleted').map((event) => Number(event.data.page)),
    );
    const heldByFirst = startedOnFirst().filter((page) => !completedAtKill.has(page));
    assert.ok(heldByFirst.length > 0, 'the first worker was killed while it held pages');
    assert.ok(completedAtKill.size < 20, 'killed mid-job');

    const done = await waitForState(client, auth, jobId, ['done', 'failed'], 120_000);
    assert.equal(done.state, 'done', JSON.stringify(done));

    const events = await jobEvents(jobId);
    const types = events.map((event) => event.type);
    const pages = events.filter((event) => event.type === 'PageCompleted').map((event) => Number(event.data.page));
    assert.deepEqual(
      [...pages].sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, index) => index + 1),
      'every page completed once',
    );
    assert.equal(types.filter((type) => type === 'JobSucceeded').length, 1);
    assert.equal(types.filter((type) => type === 'PageFailed').length, 0);
    const startedOnSecond = new Set(
      second.lines.filter((line) => line.startsWith(`page-start ${jobId} `)).map((line) => Number(line.split(' ')[2])),
    );
    for (const page of heldByFirst)
      assert.ok(startedOnSecond.has(page), `page ${page}, lost with the first worker, was done by the second`);
    assert.deepEqual((await operator.db.pool.query('select pages from billing where job_id = $1', [jobId])).rows, [{ pages: 20 }]);

    // The result: a 302 from the API to the bucket, then the archive without the API key.
    const result = await client.get(done.result_url, auth);
    assert.equal(result.status, 302);
    const archive = await fetch(result.headers.get('location')!);
    assert.equal(archive.status, 200);
    const body = JSON.parse(Buffer.from(await archive.arrayBuffer()).toString());
    assert.deepEqual(
      body.pages,
      Array.from({ length: 20 }, (_, index) => `page ${index + 1}`),
    );

    // The API process's /metrics (hwr serve's own listener) sees the job done and the requests.
    const scraped = await (await fetch(api.metricsUrl)).text();
    assert.match(scraped, /^hwr_jobs\{state="done"\} 1$/m);
    assert.match(scraped, /^hwr_http_requests_total\{method="POST",route="\/v1\/process-scan",status="202"\} 1$/m);
    assert.match(scraped, /^hwr_http_requests_total\{method="GET",route="\/v1\/process-scan\/:jobId\/result",status="302"\} 1$/m);

    // No machine stored a blob on its own disk.
    for (const dir of machines) assert.equal(existsSync(path.join(dir, 'blobs')), false, `${dir} has no blobs`);
    process.stderr.write(
      `# two machines: worker 1 killed holding pages ${heldByFirst.join(', ')} after ${completedAtKill.size} pages completed; worker 2 finished\n`,
    );

    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });
});
