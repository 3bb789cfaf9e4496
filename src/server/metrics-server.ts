// GET /metrics in the Prometheus text format, on a listener of its own (METRICS_HOST:METRICS_PORT,
// 127.0.0.1:9464 by default, so job counts are not public; METRICS_PORT=0: off). Besides this
// process's counters (metrics.ts), each scrape reads from PostgreSQL: jobs by state and, per
// pg-boss queue, ready and active tasks and the age of the oldest ready one.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import { countJobsByState } from '../../projections/job-status.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { QUEUES } from '../queue/queues.ts';
import { readQueueDepths } from '../queue/queue-depths.ts';
import { metricsRegistry } from '../metrics/metrics.ts';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

const JOB_STATES = ['queued', 'processing', 'done', 'failed', 'cancelled'];

/** The figures read from the database, for one runtime: `refresh()` reads them (two queries) before a scrape. */
export function databaseMetrics(runtime: Runtime): { registry: client.Registry; refresh(): Promise<void> } {
  const registry = new client.Registry();
  const queues = Object.values(QUEUES);
  const up = new client.Gauge({
    name: 'hwr_database_up',
    help: 'Whether the last scrape could read the database (1) or not (0)',
    registers: [registry],
  });
  const jobs = new client.Gauge({
    name: 'hwr_jobs',
    help: 'Jobs by state (job_status)',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  const ready = new client.Gauge({
    name: 'hwr_queue_ready_tasks',
    help: 'Tasks waiting to run now, per pg-boss queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const active = new client.Gauge({
    name: 'hwr_queue_active_tasks',
    help: 'Tasks running, per pg-boss queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const oldest = new client.Gauge({
    name: 'hwr_queue_oldest_ready_task_age_seconds',
    help: 'Age of the oldest task waiting to run now, per pg-boss queue (0 when none waits)',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const read = async () => {
    try {
      const [states, tasks] = await Promise.all([countJobsByState(runtime.db.pool), readQueueDepths(runtime.db.pool, queues)]);
      jobs.reset();
      for (const state of JOB_STATES) jobs.set({ state }, 0);
      for (const row of states) jobs.set({ state: row.state }, row.count);
      for (const queue of queues) {
        const row = tasks.find((candidate) => candidate.name === queue);
        ready.set({ queue }, row?.ready ?? 0);
        active.set({ queue }, row?.active ?? 0);
        oldest.set({ queue }, Math.max(0, row?.oldestReadySeconds ?? 0));
      }
      up.set(1);
    } catch (error) {
      runtime.log.warn({ err: error, component: 'metrics' }, 'metrics: could not read the database');
      up.set(0);
    }
  };
  return { registry, refresh: read };
}

export async function startMetricsServer(runtime: Runtime, port: number, host: string): Promise<MetricsServer> {
  const database = databaseMetrics(runtime);
  const registry = client.Registry.merge([metricsRegistry, database.registry]);
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://metrics');
    if (url.pathname !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    database
      .refresh()
      .then(() => registry.metrics())
      .then(
        (text) => response.writeHead(200, { 'Content-Type': registry.contentType }).end(request.method === 'HEAD' ? undefined : text),
        (error: unknown) => {
          runtime.log.error({ err: error, component: 'metrics' }, 'metrics: scrape failed');
          response.writeHead(500, { 'Content-Type': 'text/plain' }).end('scrape failed\n');
        },
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Starts the listener `hwr serve` runs (METRICS_PORT, METRICS_HOST); null when METRICS_PORT=0.
 * A port already taken (say an API and a worker process on one host, both on 9464) leaves this
 * process without /metrics and says so at `warn`, instead of failing the service's start.
 */
export async function startConfiguredMetricsServer(runtime: Runtime): Promise<MetricsServer | null> {
  const { port, host } = runtime.config.metrics;
  if (port === 0) return null;
  try {
    const server = await startMetricsServer(runtime, port, host);
    runtime.log.info({ component: 'metrics', host, port: server.port }, 'metrics on /metrics');
    return server;
  } catch (error) {
    runtime.log.warn(
      { err: error, component: 'metrics', host, port },
      'metrics: could not listen, /metrics is off in this process (set METRICS_PORT per process on one host)',
    );
    return null;
  }
}
