// GET /metrics (Prometheus text, its own listener) scraped while a real job runs through the
// engine: HTTP requests by route pattern and status, jobs by state, queue depth, pages
// processed and failed, step durations, callback attempts by outcome, pool error events.
// The job is real: real handwriting strips through the real pipelines (ONNX layout and
// recognition, the real export), one page held in its first step so that it is scraped mid-job.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { checkOut } from '../../src/db/database.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startMetricsServer } from '../../src/server/metrics-server.ts';
import { createTestDatabase } from '../support/database.ts';
import { testConfig } from '../support/engine.ts';
import { createCredentials, pagesZip, startApiServer, waitForState, waitForStatus, type Auth } from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const databaseUrl = await createTestDatabase();
// No LLM: correction is a step that keeps the recognised text (and says so).
const env = { CORRECTION_PROVIDER: 'none' };
const real = await defaultPipelines(await testConfig(databaseUrl, env), createLogger('silent'));
// `hold-*` pages held, `fail-*` pages failing (scripted); every other page real.
const pipelines = scriptedPipelines(real);
const service = await startApiServer(databaseUrl, { env, pipelines });
const metrics = await startMetricsServer(service.runtime, 0, '127.0.0.1');
const receiver = http.createServer((request, response) => request.resume().on('end', () => response.writeHead(204).end()));
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
after(async () => {
  await metrics.close();
  receiver.close();
  await service.close();
  await real.close();
});
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
const auth: Auth = { key: (await createCredentials(service.runtime, 'metrics')).key };

/** One scrape: `name{labels}` → value (labels as written by prom-client). */
async function scrape(): Promise<Map<string, number>> {
  const response = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

const value = (samples: Map<string, number>, key: string) => samples.get(key) ?? 0;

describe('GET /metrics', () => {
  test('scraped during a real job and after it', async () => {
    const before = await scrape();
    const { status, body: job } = await service.client.submit(await pagesZip(['hold-1.jpg', '2.jpg', '3.jpg']), auth, {
      webhook_url: receiverUrl,
    });
    assert.equal(status, 202);
    // Pages 2 and 3 finish; page 1 is held in processing. (The models load at the first page.)
    await waitForStatus(
      service.client,
      auth,
      job.job_id,
      (body) => body.state === 'processing' && body.pages_done === 2,
      'two pages done',
      180_000,
    );

    // The held page is claimed once a worker slot frees (pages 2 and 3 may have taken both).
    let during = await scrape();
    for (const deadline = Date.now() + 10_000; value(during, 'hwr_queue_active_tasks{queue="hwr-page"}') < 1 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      during = await scrape();
    }
    assert.equal(value(during, 'hwr_database_up'), 1);
    assert.ok(value(during, 'hwr_jobs{state="processing"}') >= 1, 'the job is processing');
    assert.ok(value(during, 'hwr_queue_active_tasks{queue="hwr-page"}') >= 1, 'the held page is an active task');
    assert.equal(value(during, 'hwr_queue_ready_tasks{queue="hwr-export"}'), 0);
    assert.ok(value(during, 'hwr_queue_oldest_ready_task_age_seconds{queue="hwr-page"}') >= 0);
    assert.equal(value(during, 'hwr_pages_processed_total') - value(before, 'hwr_pages_processed_total'), 2);
    assert.equal(value(during, 'hwr_http_requests_total{method="POST",route="/v1/process-scan",status="202"}'), 1);
    assert.ok(
      value(during, 'hwr_http_requests_total{method="GET",route="/v1/process-scan/:jobId",status="200"}') >= 1,
      'status polls, by route pattern',
    );
    assert.ok(value(during, 'hwr_http_request_duration_seconds_count{method="POST",route="/v1/process-scan",status="202"}') === 1);
    for (const key of during.keys()) assert.ok(!key.includes(job.job_id), `no job id in a label: ${key}`);

    pipelines.release(job.job_id);
    await waitForState(service.client, auth, job.job_id, ['done'], 180_000);
    await waitForStatus(service.client, auth, job.job_id, (body) => body.callback?.state === 'delivered', 'callback delivered');
    const notFound = await fetch(`${service.baseUrl}/no/such/path`);
    assert.equal(notFound.status, 404);

    const afterJob = await scrape();
    assert.equal(value(afterJob, 'hwr_pages_processed_total') - value(before, 'hwr_pages_processed_total'), 3);
    // Each real page went through layout, recognition and correction (the held one too, once let go).
    for (const [step, times] of [
      ['layout', 3],
      ['recognition', 3],
      ['correction', 3],
    ] as const) {
      assert.equal(
        value(afterJob, `hwr_page_step_duration_seconds_count{step="${step}"}`) -
          value(before, `hwr_page_step_duration_seconds_count{step="${step}"}`),
        times,
        step,
      );
    }
    assert.ok(value(afterJob, 'hwr_page_step_duration_seconds_sum{step="layout"}') > 0);
    assert.ok(value(afterJob, 'hwr_jobs{state="done"}') >= 1);
    assert.equal(value(afterJob, 'hwr_jobs{state="processing"}'), 0);
    assert.equal(
      value(afterJob, 'hwr_callback_attempts_total{outcome="delivered"}') -
        value(before, 'hwr_callback_attempts_total{outcome="delivered"}'),
      1,
    );
    assert.equal(value(afterJob, 'hwr_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
    assert.ok(afterJob.has('process_resident_memory_bytes'), 'the process basics');
    const commits =
      value(afterJob, 'hwr_command_commit_duration_seconds_count{outcome="committed"}') -
      value(before, 'hwr_command_commit_duration_seconds_count{outcome="committed"}');
    assert.ok(commits >= 5, `the job's commands were timed: ${commits}`);
  });

  test('a failing page, a refused callback and a lost pooled connection are counted', async () => {
    const before = await scrape();
    const { body: job } = await service.client.submit(await pagesZip(['fail-1.jpg']), auth, {
      webhook_url: `${receiverUrl.replace(/\d+\/hook$/, '1')}/closed`,
    });
    await waitForState(service.client, auth, job.job_id, ['failed']);
    await waitForStatus(service.client, auth, job.job_id, (body) => (body.callback?.attempts ?? 0) >= 1, 'a callback attempt');
    // A pooled connection lost for real: PostgreSQL ends it (as a restart or an administrator
    // does), ended from another of the pool's connections. It is checked out meanwhile, so that
    // no command of the service's own takes it and fails on it too.
    const { pool } = service.runtime.db;
    const doomed = await checkOut(pool);
    const pid = (await doomed.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
    const lost = once(pool, 'error');
    // Released as its first report arrives: node-postgres reports a connection the server ends
    // twice (the server's message, then the socket's end) unless the client is ended between the
    // two, and a release after an await let a loaded machine see both.
    pool.once('error', () => doomed.release(true));
    await pool.query('select pg_terminate_backend($1)', [pid]);
    const [error] = await lost;
    assert.equal((error as { code?: string }).code, '57P01', String(error));
    const afterFailure = await scrape();
    assert.equal(value(afterFailure, 'hwr_pages_failed_total') - value(before, 'hwr_pages_failed_total'), 1);
    assert.ok(
      value(afterFailure, 'hwr_callback_attempts_total{outcome="failed"}') -
        value(before, 'hwr_callback_attempts_total{outcome="failed"}') >=
        1,
    );
    assert.equal(
      value(afterFailure, 'hwr_background_errors_total{component="pg-pool"}') -
        value(before, 'hwr_background_errors_total{component="pg-pool"}'),
      1,
    );
    assert.ok(afterFailure.has('hwr_background_errors_total{component="pg-boss"}'));
    assert.equal((await fetch(`http://127.0.0.1:${metrics.port}/other`)).status, 404);
  });
});
