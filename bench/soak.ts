// The soak (docs/benchmarks.md, "Soak"; issue 15, item 7): one local service started as the README
// says (`hwr serve`, embedded PostgreSQL in a temporary DATA_DIR, the real page pipeline, no
// correction provider), and for a bounded time several clients, each in a loop: submit a small job
// (1 to --max-pages real scanned pages from test/fixtures/pages, zipped) with a webhook_url, poll its
// status, cancel some of them at a random moment. A local callback receiver checks every signature
// and answers 500 to a third of the first attempts of its deliveries, 204 otherwise. Everything is
// on 127.0.0.1: the service, its database, the receiver (WEBHOOK_ALLOW_HTTP/WEBHOOK_ALLOW_PRIVATE
// let the service call it, as the API tests do).
//
// It prints jobs and pages per minute, status-GET latency, and a table sampled over time of the
// service's resident memory, the PostgreSQL database's size and the blob store's bytes. Once the
// clients have stopped submitting, their last jobs have ended and the callbacks have settled, it
// checks, and prints PASS or FAIL for each (exit 1 on any FAIL):
//  - every job terminal (and every cancel answered 200 ended cancelled, every 409 done or failed);
//  - every callback delivered as docs/callbacks.md says: one delivery per done or failed job, none
//    for a cancelled one; signed; the same delivery id on each attempt; a refused first attempt
//    retried after the 1 s delay, the delivery over at its first 2xx; the service's own counters agree;
//  - billing equal to the pages of done jobs (`hwr billing`, and per job in the billing table);
//  - `hwr projections verify` passes;
//  - no leaked blobs or temporary files: every folder under DATA_DIR/blobs/jobs is a job the
//    clients submitted, holding only what its state allows; no write in progress; nothing under DATA_DIR/tmp.
//
// `--chaos SECONDS` (with `--split`): about every SECONDS (seeded, 0.5 to 1.5 times) the worker process is
// SIGKILLed and a new one started, or the embedded PostgreSQL's postmaster is SIGKILLed (its owner, the
// API process, starts it again), in turn; the same checks must pass. Files of writes a kill cut short,
// and results of page attempts killed between storing and recording them, are the sweep's and the
// expiry's to remove: counted, not failed.
//
// `--s3`: the stored files in an S3 bucket (s3rver, the tests' S3-protocol server, on 127.0.0.1), and
// with `--chaos` the S3 server is also stopped for 5 s in turn (every call refused), as an object
// store restart does: the workers wait for it and run their tasks again (docs/reliability.md).
//
// `npm run bench:soak [-- --minutes 10] [-- --clients 4] [-- --max-pages 2] [-- --cancel 0.2] [-- --seed 1] [-- --split [-- --chaos 60]]`
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { BlobStore } from '../src/blobs/blob-store.ts';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { S3BlobStore } from '../src/blobs/s3-blob-store.ts';
import { storageKind, storageStats } from '../src/blobs/storage-stats.ts';
import { verifyCallbackSignature } from '../src/callbacks/signature.ts';
import { freePort, startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { CALLBACK_RETRY_DELAYS_SECONDS } from '../domain/job-decide.ts';
import { runS3Server } from '../test/support/s3-server.ts';
import { markdownTable } from './lib/table.ts';
import { mulberry32 } from './lib/seeded-random.ts';
import { startService, zipOf } from './lib/service.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const minutes = Number(option('--minutes', '10'));
const clients = Number(option('--clients', '4'));
const maxPages = Number(option('--max-pages', '2'));
const cancelShare = Number(option('--cancel', '0.2'));
const seed = Number(option('--seed', '1'));
const sampleSeconds = Number(option('--sample-seconds', String(Math.max(5, Math.round((minutes * 60) / 12)))));
const drainMinutes = Number(option('--drain-minutes', '10'));
/** `--split`: the API (`hwr serve --role api`) and the workers (`--role worker`) in two processes, as docs/deployment.md scales out. */
const split = args.includes('--split');
const chaosSeconds = args.includes('--chaos') ? Number(option('--chaos', '60')) : null;
const useS3 = args.includes('--s3');
if (chaosSeconds !== null && !split) throw new Error('--chaos needs --split (the worker is killed and restarted on its own)');
const POLL_MS = 500;
/** A job picked for cancelling is cancelled this long after its submission, at random (most are still running then). */
const CANCEL_WITHIN_MS = 8000;
const TERMINAL = new Set(['done', 'failed', 'cancelled']);

const fixtureDir = path.resolve(import.meta.dirname, '../test/fixtures/pages');
const fixtures = await Promise.all(
  (await readdir(fixtureDir))
    .filter((file) => /\.(png|jpe?g)$/i.test(file))
    .sort()
    .map(async (file) => ({ extension: path.extname(file).toLowerCase(), body: await readFile(path.join(fixtureDir, file)) })),
);

// ---------------------------------------------------------------- the callback receiver
interface Attempt {
  receivedAt: number;
  event: string;
  deliveryId: string;
  signatureValid: boolean;
  body: { job_id?: string; state?: string; page_count?: number; event_id?: string; result_url?: string };
  answered: number;
}
const attemptsByJob = new Map<string, Attempt[]>();
let webhookSecret = '';
let firstAttempts = 0;
const refusedFirst = new Set<string>();
const receiver = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const raw = Buffer.concat(chunks);
    let body: Attempt['body'] = {};
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {}
    const deliveryId = String(request.headers['x-svc-delivery'] ?? '');
    const signatureValid = verifyCallbackSignature(webhookSecret, raw, request.headers['x-svc-signature'] as string | undefined);
    const jobId = String(body.job_id ?? 'unknown');
    const previous = attemptsByJob.get(jobId) ?? [];
    let answered = 204;
    if (!signatureValid) answered = 403;
    else if (!previous.some((attempt) => attempt.deliveryId === deliveryId)) {
      // The first attempt of a delivery: every third one is refused (the 1st, 4th, 7th, ...).
      if (firstAttempts++ % 3 === 0) {
        answered = 500;
        refusedFirst.add(jobId);
      }
    }
    previous.push({
      receivedAt: Date.now(),
      event: String(request.headers['x-svc-event'] ?? ''),
      deliveryId,
      signatureValid,
      body,
      answered,
    });
    attemptsByJob.set(jobId, previous);
    response.writeHead(answered).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

// ---------------------------------------------------------------- the object store (--s3)
const s3 = useS3 ? await runS3Server() : null;

// ---------------------------------------------------------------- the service
const metricsPort = await freePort();
const service = await startService(
  { WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE: '1', METRICS_PORT: String(metricsPort), ...(s3?.env() ?? {}) },
  split ? 'api' : 'all',
);
/** The store the service writes to, read for the samples and the leak check. */
const store: BlobStore = s3
  ? new S3BlobStore({ ...s3.settings(), tempDir: path.join(os.tmpdir(), 'hwr-soak-s3-downloads') })
  : new FilesystemBlobStore(path.join(service.dataDir, 'blobs'));
webhookSecret = service.webhookSecret;
/** The service's processes: their memory is sampled, their metrics read. */
const processes = [{ label: split ? 'API' : 'service', pid: service.process.pid!, metricsPort }];
const workerMetricsPort = await freePort();
let worker = split ? service.startWorker({ METRICS_PORT: String(workerMetricsPort), LOG_LEVEL: 'error' }) : null;
if (worker) processes.push({ label: 'worker', pid: worker.pid!, metricsPort: workerMetricsPort });
/** What the chaos did, and when (s since the start). */
const chaosLog: Array<[string, string]> = [];
const headers = { 'X-API-Key': service.key };
const database = await startEmbeddedPostgres({ dataDir: path.join(service.dataDir, 'postgres'), port: await freePort() });
if (database.owned) {
  await database.stop();
  await service.stop();
  throw new Error('the service has no running embedded PostgreSQL to measure');
}
// A pool, not one client: a connection to a postmaster the chaos kills is dropped, not the soak.
const db = new pg.Pool({ connectionString: database.url, max: 2 });
db.on('error', () => {});

let exitCode = 0;
try {
  exitCode = await soak();
} finally {
  await db.end();
  await service.stop();
  await s3?.stop();
  receiver.close();
}
process.exit(exitCode);

async function soak(): Promise<number> {
  const workerConcurrency = process.env.WORKER_CONCURRENCY ?? String(os.cpus().length);
  console.log(
    `# hwr soak: ${minutes} min, ${split ? 'API and workers in two processes' : 'one process (API and workers)'}, ${clients} clients, jobs of 1–${maxPages} real pages, ${Math.round(cancelShare * 100)} % cancelled, ` +
      `a third of first callback attempts refused (${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB, ` +
      `load ${loadText()} at start; WORKER_CONCURRENCY=${workerConcurrency}, no correction, seed ${seed})\n`,
  );
  const started = performance.now();
  const deadline = started + minutes * 60_000;
  const drainDeadline = deadline + drainMinutes * 60_000;
  const stats: Stats = { jobs: [], statusLatencies: [], throttled: 0, unavailable: 0, submitErrors: [] };

  const samples: string[][] = [];
  const sample = async (): Promise<void> => {
    samples.push(await sampleRow(stats, started));
  };
  await sample();
  let sampling = Promise.resolve();
  const sampler = setInterval(() => {
    sampling = sampling.then(sample).catch(() => {});
  }, sampleSeconds * 1000);
  const chaos = chaosSeconds === null ? Promise.resolve() : runChaos(chaosSeconds, started, deadline);
  await Promise.all(Array.from({ length: clients }, (_, index) => runClient(index, stats, deadline, drainDeadline)));
  await chaos;
  const ended = performance.now();
  clearInterval(sampler);
  await sampling;
  await sample();

  // Figures.
  const runMinutes = minutes;
  const endedInRun = stats.jobs.filter((job) => job.endedAt !== null && job.endedAt <= deadline);
  const donePagesInRun = endedInRun.filter((job) => job.state === 'done').reduce((sum, job) => sum + job.pages, 0);
  const byState = (state: string) => stats.jobs.filter((job) => job.state === state);
  const donePages = byState('done').reduce((sum, job) => sum + job.pages, 0);
  const latencies = [...stats.statusLatencies].sort((a, b) => a - b);
  console.log(
    markdownTable(
      ['figure', 'value'],
      [
        ['jobs submitted', String(stats.jobs.length)],
        ['jobs done / cancelled / failed', `${byState('done').length} / ${byState('cancelled').length} / ${byState('failed').length}`],
        ['pages of done jobs', String(donePages)],
        ['jobs ended per minute (during the run)', (endedInRun.length / runMinutes).toFixed(2)],
        ['pages done per minute (during the run)', (donePagesInRun / runMinutes).toFixed(2)],
        ['drain after the run (last jobs ending)', `${((ended - deadline) / 1000).toFixed(1)} s`],
        [
          'status GETs: count, p50, p99, max',
          `${latencies.length}, ${quantile(latencies, 0.5).toFixed(1)} ms, ${quantile(latencies, 0.99).toFixed(1)} ms, ${(latencies.at(-1) ?? 0).toFixed(1)} ms`,
        ],
        ['429 / 503 answers (waited Retry-After)', `${stats.throttled} / ${stats.unavailable}`],
        ['submissions refused otherwise', stats.submitErrors.length === 0 ? '0' : stats.submitErrors.join('; ')],
        ...(await Promise.all(
          processes.map(async (each) => [`${each.label} process: peak RSS (VmHWM)`, `${(await memoryMiB(each.pid)).peak.toFixed(0)} MiB`]),
        )),
        ['load average (1, 5, 15 min) at the end', loadText()],
      ],
    ),
  );
  console.log(`\nOver time (every ${sampleSeconds} s):\n`);
  console.log(
    markdownTable(
      [
        't (s)',
        'jobs submitted',
        'jobs ended',
        'pages done',
        ...processes.map((each) => `${each.label} RSS MiB`),
        `${processes[0].label} event-loop delay max ms`,
        'PostgreSQL MiB',
        'blobs MiB',
        'load 1 min',
      ],
      samples,
    ),
  );

  if (chaosLog.length > 0) console.log(`\nChaos:\n\n${markdownTable(['t (s)', 'what'], chaosLog)}`);

  // Callbacks settle: every done or failed job's delivery ends (delivered or abandoned).
  const settleDeadline = performance.now() + 5 * 60_000;
  const finalStatus = new Map<string, StatusBody>();
  for (const job of stats.jobs) {
    for (;;) {
      const status = await getStatus(job.id, stats, false);
      finalStatus.set(job.id, status);
      const delivery = status.callback?.state;
      if (status.state === 'cancelled' || delivery === 'delivered' || delivery === 'abandoned' || performance.now() > settleDeadline) break;
      await sleep(250);
    }
  }

  console.log('\nChecks:\n');
  const results: Array<[string, boolean, string]> = [];
  results.push(await checkTerminal(stats, finalStatus));
  results.push(await checkCallbacks(stats, finalStatus));
  results.push(await checkBilling(stats));
  results.push(await checkProjections());
  results.push(await checkLeaks(stats, finalStatus));
  const failed = stats.jobs.filter((job) => finalStatus.get(job.id)?.state === 'failed');
  results.push([
    'no job failed (real pages, nothing to fail on)',
    failed.length === 0,
    failed.length === 0 ? '0 failed' : failed.map((job) => `${job.id}: ${finalStatus.get(job.id)?.error_message}`).join('; '),
  ]);
  for (const [name, ok, detail] of results) console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}: ${detail}`);
  return results.every(([, ok]) => ok) ? 0 : 1;
}

// ---------------------------------------------------------------- chaos
async function runChaos(everySeconds: number, started: number, deadline: number): Promise<void> {
  const random = mulberry32(seed * 7919);
  const at = () => ((performance.now() - started) / 1000).toFixed(0);
  for (let round = 0; ; round++) {
    const wait = everySeconds * 1000 * (0.5 + random());
    if (performance.now() + wait >= deadline) return;
    await sleep(wait);
    const kind = round % (s3 ? 3 : 2);
    if (kind === 2 && s3) {
      await s3.pause();
      chaosLog.push([at(), 'S3 server stopped for 5 s (connections refused)']);
      await sleep(5000);
      await s3.resume();
    } else if (kind === 0 && worker) {
      const killed = worker.pid;
      worker.kill('SIGKILL');
      await new Promise((resolve) =>
        worker?.exitCode !== null || worker?.signalCode !== null ? resolve(null) : worker?.once('exit', resolve),
      );
      worker = service.startWorker({ METRICS_PORT: String(workerMetricsPort), LOG_LEVEL: 'error' });
      processes[1].pid = worker.pid!;
      chaosLog.push([at(), `worker ${killed} SIGKILLed; worker ${worker.pid} started`]);
    } else {
      const postmaster = Number((await readFile(path.join(service.dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
      process.kill(postmaster, 'SIGKILL');
      chaosLog.push([at(), `PostgreSQL postmaster ${postmaster} SIGKILLed (its owner restarts it)`]);
    }
  }
}

// ---------------------------------------------------------------- clients
interface JobRecord {
  id: string;
  client: number;
  pages: number;
  submittedAt: number;
  cancelAnswer: number | null;
  state: string | null;
  endedAt: number | null;
}

interface Stats {
  jobs: JobRecord[];
  statusLatencies: number[];
  throttled: number;
  unavailable: number;
  submitErrors: string[];
}

interface StatusBody {
  job_id: string;
  state: string;
  page_count: number;
  error_message: string | null;
  result_url?: string;
  callback: { state: string; attempts: number; last_status: number | null } | null;
}

async function runClient(index: number, stats: Stats, deadline: number, drainDeadline: number): Promise<void> {
  // One generator per client: its jobs and its cancels are the same from run to run.
  const random = mulberry32(seed * 1000 + index);
  while (performance.now() < deadline) {
    const pages = 1 + Math.floor(random() * maxPages);
    const zip = await zipOf(
      Array.from({ length: pages }, (_, page) => {
        const fixture = fixtures[Math.floor(random() * fixtures.length)];
        return { name: `${String(page + 1).padStart(4, '0')}${fixture.extension}`, body: fixture.body };
      }),
    );
    const cancelAfter = random() < cancelShare ? random() * CANCEL_WITHIN_MS : null;
    const form = new FormData();
    form.append('scan_zip', new Blob([zip], { type: 'application/zip' }), 'pages.zip');
    form.append('webhook_url', `${receiverUrl}/client-${index}`);
    const { response } = await call('POST', '/v1/process-scan', stats, form);
    if (response.status !== 202) {
      stats.submitErrors.push(`${response.status} ${(await response.text()).slice(0, 200)}`);
      await sleep(1000);
      continue;
    }
    const job: JobRecord = {
      id: ((await response.json()) as { job_id: string }).job_id,
      client: index,
      pages,
      submittedAt: performance.now(),
      cancelAnswer: null,
      state: null,
      endedAt: null,
    };
    stats.jobs.push(job);
    for (;;) {
      if (cancelAfter !== null && job.cancelAnswer === null && performance.now() - job.submittedAt >= cancelAfter) {
        const { response: cancelled } = await call('DELETE', `/v1/process-scan/${job.id}`, stats);
        job.cancelAnswer = cancelled.status;
        await cancelled.arrayBuffer();
      }
      const status = await getStatus(job.id, stats, true);
      if (TERMINAL.has(status.state)) {
        job.state = status.state;
        job.endedAt = performance.now();
        break;
      }
      if (performance.now() > drainDeadline) return;
      await sleep(POLL_MS);
    }
  }
}

async function getStatus(jobId: string, stats: Stats, measure: boolean): Promise<StatusBody> {
  const { response, begun } = await call('GET', `/v1/process-scan/${jobId}`, stats);
  const body = await response.text();
  if (response.status !== 200) throw new Error(`status of ${jobId}: ${response.status} ${body.slice(0, 300)}`);
  // From the answered attempt's start (a 429's wait is the limiter, not the status read).
  if (measure) stats.statusLatencies.push(performance.now() - begun);
  return JSON.parse(body) as StatusBody;
}

/** One request; 429 and 503 are waited out as their Retry-After says, and counted. `begun`: when the answered attempt started. */
async function call(method: string, pathname: string, stats: Stats, body?: FormData): Promise<{ response: Response; begun: number }> {
  for (;;) {
    const begun = performance.now();
    const response = await fetch(`${service.baseUrl}${pathname}`, { method, headers, body });
    if (response.status !== 429 && !(response.status === 503 && response.headers.has('retry-after'))) return { response, begun };
    if (response.status === 429) stats.throttled++;
    else stats.unavailable++;
    const wait = Number(response.headers.get('retry-after') ?? '1');
    await response.arrayBuffer();
    await sleep(Math.max(0.05, Number.isFinite(wait) ? wait : 1) * 1000);
  }
}

// ---------------------------------------------------------------- sampling
async function sampleRow(stats: Stats, started: number): Promise<string[]> {
  const memory = await Promise.all(processes.map((each) => memoryMiB(each.pid)));
  // The longest the API's event loop was held since the last sample (prom-client resets it at each scrape).
  const metrics = await scrape(processes[0].metricsPort);
  const delay = Number(/^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(metrics)?.[1] ?? Number.NaN) * 1000;
  const size = await db.query<{ bytes: string }>('select pg_database_size(current_database()) as bytes');
  // The store may be away (--s3 --chaos): the sample says so rather than ending the soak.
  const blobs = await storageStats(store).catch(() => null);
  const ended = stats.jobs.filter((job) => job.state !== null);
  return [
    ((performance.now() - started) / 1000).toFixed(0),
    String(stats.jobs.length),
    String(ended.length),
    String(ended.filter((job) => job.state === 'done').reduce((sum, job) => sum + job.pages, 0)),
    ...memory.map((each) => each.rss.toFixed(0)),
    delay.toFixed(0),
    (Number(size.rows[0].bytes) / 1024 ** 2).toFixed(1),
    blobs ? (blobs.total.bytes / 1024 ** 2).toFixed(1) : 'away',
    os.loadavg()[0].toFixed(2),
  ];
}

// ---------------------------------------------------------------- checks
type Check = [string, boolean, string];

async function checkTerminal(stats: Stats, finalStatus: Map<string, StatusBody>): Promise<Check> {
  const problems: string[] = [];
  for (const job of stats.jobs) {
    const state = finalStatus.get(job.id)?.state;
    if (!state || !TERMINAL.has(state)) problems.push(`${job.id} is ${state}`);
    if (job.cancelAnswer === 200 && state !== 'cancelled') problems.push(`${job.id}: cancel answered 200, job ${state}`);
    if (job.cancelAnswer === 409 && state !== 'done' && state !== 'failed') problems.push(`${job.id}: cancel answered 409, job ${state}`);
    if (job.cancelAnswer !== null && job.cancelAnswer !== 200 && job.cancelAnswer !== 409)
      problems.push(`${job.id}: cancel answered ${job.cancelAnswer}`);
  }
  // The database holds exactly the clients' jobs, every one ended.
  const rows = await db.query<{ state: string; jobs: string }>('select state, count(*) as jobs from job_status group by state');
  const inDatabase = rows.rows.reduce((sum, row) => sum + Number(row.jobs), 0);
  const open = rows.rows.filter((row) => !TERMINAL.has(row.state));
  if (inDatabase !== stats.jobs.length) problems.push(`job_status has ${inDatabase} jobs, the clients submitted ${stats.jobs.length}`);
  if (open.length > 0) problems.push(`job_status: ${open.map((row) => `${row.jobs} ${row.state}`).join(', ')}`);
  const cancels = stats.jobs.filter((job) => job.cancelAnswer !== null);
  return [
    'every job terminal',
    problems.length === 0,
    problems.length === 0
      ? `${stats.jobs.length} of ${stats.jobs.length}; ${cancels.length} cancels sent: ${cancels.filter((job) => job.cancelAnswer === 200).length} answered 200 and ended cancelled, ${cancels.filter((job) => job.cancelAnswer === 409).length} answered 409 (already finished)`
      : problems.slice(0, 10).join('; '),
  ];
}

async function checkCallbacks(stats: Stats, finalStatus: Map<string, StatusBody>): Promise<Check> {
  const problems: string[] = [];
  const retryDelayMs = CALLBACK_RETRY_DELAYS_SECONDS[0] * 1000;
  let deliveries = 0;
  let retried = 0;
  let attempts = 0;
  const gaps: number[] = [];
  for (const job of stats.jobs) {
    const status = finalStatus.get(job.id)!;
    const received = attemptsByJob.get(job.id) ?? [];
    attempts += received.length;
    if (status.state === 'cancelled') {
      if (received.length > 0) problems.push(`${job.id}: cancelled, yet ${received.length} callbacks arrived`);
      // A cancelled job's delivery is never sent (docs/callbacks.md: `not_sent`).
      if (status.callback?.state !== 'not_sent' || status.callback.attempts !== 0)
        problems.push(`${job.id}: cancelled, callback ${JSON.stringify(status.callback)}`);
      continue;
    }
    deliveries++;
    const refused = refusedFirst.has(job.id);
    const expected = refused ? 2 : 1;
    if (received.length !== expected) {
      problems.push(`${job.id}: ${received.length} attempts received, ${expected} expected`);
      continue;
    }
    const event = status.state === 'done' ? 'job.completed' : 'job.failed';
    const first = received[0];
    for (const attempt of received) {
      if (!attempt.signatureValid) problems.push(`${job.id}: a bad signature`);
      if (attempt.deliveryId !== first.deliveryId || attempt.body.event_id !== first.deliveryId)
        problems.push(`${job.id}: delivery ids differ (${attempt.deliveryId}, ${attempt.body.event_id}, ${first.deliveryId})`);
      if (attempt.event !== event || attempt.body.state !== status.state || attempt.body.page_count !== job.pages)
        problems.push(
          `${job.id}: ${attempt.event} ${attempt.body.state} ${attempt.body.page_count} pages, job ${status.state} of ${job.pages}`,
        );
      if (status.state === 'done' && attempt.body.result_url !== status.result_url)
        problems.push(`${job.id}: result_url ${attempt.body.result_url}`);
    }
    if (refused) {
      retried++;
      const gap = received[1].receivedAt - first.receivedAt;
      gaps.push(gap);
      // The retry waits its delay (1 s × CALLBACK_RETRY_SCALE, 1 here); 50 ms of clock slack.
      if (gap < retryDelayMs - 50) problems.push(`${job.id}: retried after ${gap} ms, before the ${retryDelayMs} ms delay`);
    }
    if (received.at(-1)!.answered !== 204 || received.slice(0, -1).some((attempt) => attempt.answered === 204))
      problems.push(`${job.id}: the delivery did not end at its first 2xx`);
    if (status.callback?.state !== 'delivered' || status.callback.attempts !== expected || status.callback.last_status !== 204)
      problems.push(`${job.id}: status says callback ${JSON.stringify(status.callback)}`);
  }
  const unknown = [...attemptsByJob.keys()].filter((jobId) => !stats.jobs.some((job) => job.id === jobId));
  if (unknown.length > 0) problems.push(`callbacks for unknown jobs: ${unknown.join(', ')}`);
  // The service's own count of attempts (GET /metrics) against what the receiver answered.
  const metrics = await Promise.all(processes.map((each) => scrape(each.metricsPort)));
  const counted = (outcome: string) =>
    metrics.reduce(
      (sum, text) => sum + Number(new RegExp(`^hwr_callback_attempts_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0),
      0,
    );
  const answered = (status: number) => [...attemptsByJob.values()].flat().filter((attempt) => attempt.answered === status).length;
  // A killed worker's counters die with it (Prometheus reads that as a reset): under chaos the
  // running processes count only what they sent themselves.
  if (chaosSeconds === null && (counted('delivered') !== answered(204) || counted('http_error') !== answered(500) + answered(403)))
    problems.push(
      `metrics count ${counted('delivered')} delivered and ${counted('http_error')} http_error; the receiver answered ${answered(204)} × 204, ${answered(500)} × 500, ${answered(403)} × 403`,
    );
  const maxGap = gaps.length ? Math.max(...gaps) : 0;
  const minGap = gaps.length ? Math.min(...gaps) : 0;
  return [
    'each callback delivered as docs/callbacks.md says',
    problems.length === 0,
    problems.length === 0
      ? `${deliveries} deliveries in ${attempts} attempts, all signed; ${retried} first attempts refused with 500 and retried after ${(minGap / 1000).toFixed(2)}–${(maxGap / 1000).toFixed(2)} s; ` +
        `no callback for the ${stats.jobs.length - deliveries} cancelled jobs; metrics: ${counted('delivered')} delivered, ${counted('http_error')} http_error`
      : problems.slice(0, 10).join('; '),
  ];
}

async function checkBilling(stats: Stats): Promise<Check> {
  const problems: string[] = [];
  const done = stats.jobs.filter((job) => job.state === 'done');
  const donePages = done.reduce((sum, job) => sum + job.pages, 0);
  const report = await service.hwr(['billing', '--account', 'default']);
  const line = report.stdout.trim()
    ? (JSON.parse(report.stdout.trim().split('\n')[0]) as { jobs: number; pages: number })
    : { jobs: 0, pages: 0 };
  if (report.code !== 0) problems.push(`hwr billing exited ${report.code}: ${report.stderr.trim().slice(0, 300)}`);
  if (line.jobs !== done.length || line.pages !== donePages)
    problems.push(`hwr billing: ${line.jobs} jobs, ${line.pages} pages; done: ${done.length} jobs, ${donePages} pages`);
  const rows = await db.query<{ job_id: string; pages: number }>('select job_id::text, pages from billing');
  const billed = new Map(rows.rows.map((row) => [row.job_id, Number(row.pages)]));
  for (const job of stats.jobs) {
    const pages = billed.get(job.id);
    if (job.state === 'done' && pages !== job.pages) problems.push(`${job.id}: done with ${job.pages} pages, billed ${pages}`);
    if (job.state !== 'done' && pages !== undefined) problems.push(`${job.id}: ${job.state}, billed ${pages} pages`);
  }
  return [
    'billing equals the pages of done jobs',
    problems.length === 0,
    problems.length === 0
      ? `hwr billing: ${line.jobs} jobs, ${line.pages} pages = ${done.length} done jobs of ${donePages} pages; no row for cancelled or failed jobs`
      : problems.slice(0, 10).join('; '),
  ];
}

async function checkProjections(): Promise<Check> {
  const verify = await service.hwr(['projections', 'verify']);
  const last = verify.stdout.trim().split('\n').at(-1) ?? '';
  return [
    'hwr projections verify',
    verify.code === 0,
    verify.code === 0 ? last : `exit ${verify.code}: ${verify.stdout.trim().slice(0, 500)} ${verify.stderr.trim().slice(0, 300)}`,
  ];
}

async function checkLeaks(stats: Stats, finalStatus: Map<string, StatusBody>): Promise<Check> {
  const problems: string[] = [];
  /** Under chaos: writes a kill cut short (the sweep's, an hour on) and results no event names (the expiry's). */
  const cutShort: string[] = [];
  let unrecorded = 0;
  const known = new Map(stats.jobs.map((job) => [job.id, job]));
  const files = new Map<string, string[]>();
  for (const key of await storedKeys()) {
    if (key.endsWith('.tmp')) {
      if (chaosSeconds === null) problems.push(`a write left behind: ${key}`);
      else cutShort.push(key);
      continue;
    }
    if (storageKind(key) === 'other') {
      problems.push(`a blob outside the layout: ${key}`);
      continue;
    }
    const jobId = key.split('/')[1];
    files.set(jobId, [...(files.get(jobId) ?? []), key.split('/').slice(2).join('/')]);
  }
  for (const [jobId, keys] of files) {
    const job = known.get(jobId);
    if (!job) {
      problems.push(`jobs/${jobId}: no such job (an orphan)`);
      continue;
    }
    const state = finalStatus.get(jobId)?.state;
    const pageImages = keys.filter((key) => key.startsWith('pages/')).length;
    const results = keys.filter((key) => key.startsWith('results/')).map((key) => Number(key.slice(8, 12)));
    // Archives are named by the export attempt that wrote them (src/blobs/blob-keys.ts).
    const archives = keys.filter((key) => /^result(\.[^/]+)?\.zip$/.test(key)).length;
    const pagesWithResults = new Set(results).size;
    if (!keys.includes('upload.zip')) problems.push(`${jobId}: no upload (retention is 7 days)`);
    if (pageImages !== job.pages) problems.push(`${jobId}: ${pageImages} page images for ${job.pages} pages`);
    if (results.some((page) => !(page >= 1 && page <= job.pages))) problems.push(`${jobId}: a result of a page it does not have`);
    if (chaosSeconds !== null) unrecorded += results.length - pagesWithResults;
    else if (results.length !== pagesWithResults) problems.push(`${jobId}: ${results.length} page results for ${pagesWithResults} pages`);
    if (state === 'done' && (pagesWithResults !== job.pages || archives !== 1))
      problems.push(`${jobId}: done with results of ${pagesWithResults} pages, ${archives} archives`);
    if (state !== 'done' && archives > 0) problems.push(`${jobId}: ${state} with a result archive`);
  }
  for (const job of stats.jobs) if (!files.has(job.id)) problems.push(`${job.id}: no files at all`);
  const temp = await filesUnder(path.join(service.dataDir, 'tmp'));
  if (temp.length > 0) problems.push(`DATA_DIR/tmp holds ${temp.length} files: ${temp.slice(0, 5).join(', ')}`);
  const storage = await service.hwr(['storage', 'stats']);
  const totals =
    storage.code === 0 ? (JSON.parse(storage.stdout.trim()) as { jobs: number; total: { blobs: number; bytes: number } }) : null;
  if (!totals) problems.push(`hwr storage stats exited ${storage.code}`);
  else if (totals.jobs !== stats.jobs.length)
    problems.push(`hwr storage stats counts ${totals.jobs} jobs, the clients submitted ${stats.jobs.length}`);
  return [
    'no leaked blobs or temporary files',
    problems.length === 0,
    problems.length === 0
      ? `${files.size} job folders = ${stats.jobs.length} jobs, each holding what its state allows; ${chaosSeconds === null ? 'no write in progress' : `${cutShort.length} writes cut short by a kill (the sweep's), ${unrecorded} results of killed attempts (the expiry's)`}; DATA_DIR/tmp empty; hwr storage stats: ${totals!.total.blobs} blobs, ${(totals!.total.bytes / 1024 ** 2).toFixed(1)} MiB`
      : problems.slice(0, 10).join('; '),
  ];
}

/** Every key in the store, partial writes of the filesystem store included (`*.tmp`). */
async function storedKeys(): Promise<string[]> {
  if (s3) {
    const keys: string[] = [];
    for await (const { key } of store.walk('jobs')) keys.push(key);
    return keys;
  }
  const blobRoot = path.join(service.dataDir, 'blobs');
  return (await readdir(blobRoot, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(blobRoot, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

async function filesUnder(directory: string): Promise<string[]> {
  const exists = await stat(directory).catch(() => null);
  if (!exists) return [];
  return (await readdir(directory, { recursive: true, withFileTypes: true }))
    .filter((entry) => !entry.isDirectory())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)));
}

// ---------------------------------------------------------------- helpers
async function memoryMiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function loadText(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
