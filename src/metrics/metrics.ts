// Prometheus metrics of this process (prom-client), served by server/metrics-server.ts on its own
// listener (METRICS_PORT). Counters and histograms live here and are updated where things
// happen; the figures read from the database (jobs by state, queue depth) are collected at
// scrape time by the server. docs/operations.md says what each means and what to alert on.
import client from 'prom-client';

export const metricsRegistry = new client.Registry();
client.collectDefaultMetrics({ register: metricsRegistry });

export const httpRequests = new client.Counter({
  name: 'hwr_http_requests_total',
  help: 'HTTP requests answered, by method, route (the router pattern; "unmatched" for none) and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDuration = new client.Histogram({
  name: 'hwr_http_request_duration_seconds',
  help: 'Time from the request to the end of its response (bodies included, uploads and downloads too), by method, route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

export const pagesProcessed = new client.Counter({
  name: 'hwr_pages_processed_total',
  help: 'Pages this process ran through the page pipeline to a result',
  registers: [metricsRegistry],
});

export const pagesFailed = new client.Counter({
  name: 'hwr_pages_failed_total',
  help: 'Page attempts whose pipeline failed in this process (retried up to PAGE_RETRY_LIMIT; a cancel, a hand-back or a database outage is not counted)',
  registers: [metricsRegistry],
});

export const exportsFailed = new client.Counter({
  name: 'hwr_exports_failed_total',
  help: "Export attempts (a job's result archive) that failed in this process, by outcome: retried, job_failed (the error is permanent or the attempts are spent), or reexport_abandoned (a re-export after corrections gave up; the archive before it stays); a hand-back, an ended job or a database outage ridden out is not counted",
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const pageStepDuration = new client.Histogram({
  name: 'hwr_page_step_duration_seconds',
  help: 'Time a page spent in each pipeline step (layout, recognition, correction), in this process',
  labelNames: ['step'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
  registers: [metricsRegistry],
});

export const commandCommitDuration = new client.Histogram({
  name: 'hwr_command_commit_duration_seconds',
  help: "Time of the command bus's transactions: a command's event append with its projections and reactions (committed or failed), in this process",
  labelNames: ['outcome'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

export const callbackAttempts = new client.Counter({
  name: 'hwr_callback_attempts_total',
  help: 'Callback deliveries attempted by this process, by outcome: delivered (2xx), http_error (another status), timeout, failed (address refused, connection, TLS)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const backgroundErrors = new client.Counter({
  name: 'hwr_background_errors_total',
  help: "'error' events of pg-boss (maintenance, workers) and of the PostgreSQL pool (a pooled connection lost), by component",
  labelNames: ['component'] as const,
  registers: [metricsRegistry],
});

for (const outcome of ['delivered', 'http_error', 'timeout', 'failed']) callbackAttempts.inc({ outcome }, 0);
for (const component of ['pg-boss', 'pg-pool']) backgroundErrors.inc({ component }, 0);
for (const outcome of ['retried', 'job_failed', 'reexport_abandoned']) exportsFailed.inc({ outcome }, 0);

/** The outcome label of one callback attempt. */
export function callbackOutcomeLabel(outcome: { ok: boolean; status: number | null; error: string | null }): string {
  if (outcome.ok) return 'delivered';
  if (outcome.status !== null) return 'http_error';
  if (outcome.error?.startsWith('timeout')) return 'timeout';
  return 'failed';
}
