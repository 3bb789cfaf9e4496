// Engine benchmarks (figures for docs/benchmarks.md):
//  1. events appended per second: 1 writer, and 8 concurrent writers on different streams
//     (each append = one transaction with its inline projections);
//  2. latency from JobQueued to a worker starting the first page task, idle workers (p50, p99);
//  3. rebuild speed over >= 100,000 events.
// Runs on a fresh embedded PostgreSQL in a temp directory: `npm run bench:store [-- --events 100000]`.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DomainEvent } from '../domain/events.ts';
import { loadConfig } from '../src/platform/config.ts';
import { startEmbeddedPostgres, freePort } from '../src/db/embedded-postgres.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startRuntime, type Runtime } from '../src/runtime/runtime.ts';
import { appendToStream } from '../src/store/append-to-stream.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrate } from '../src/store/migrate.ts';
import { rebuildProjections, verifyProjections } from '../src/store/replay-projections.ts';
import { createAccount } from '../src/use-cases/accounts.ts';
import type { ExportPipeline, PagePipeline } from '../src/pipeline/pipeline.ts';

const args = process.argv.slice(2);
const rebuildEvents = Number(args[args.indexOf('--events') + 1] || 100_000) || 100_000;
const appendSeconds = 5;

const dir = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-store-'));
const database = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
const row = (label: string, value: string) => console.log(`${label.padEnd(52)} ${value}`);

try {
  const pageStarts = new Map<string, number>();
  const page: PagePipeline = {
    async processPage(task) {
      if (!pageStarts.has(task.jobId)) pageStarts.set(task.jobId, performance.now());
      throw Object.assign(new Error('bench: stop here'), { retryable: false });
    },
  };
  const noExport: ExportPipeline = {
    exportJob: async () => {
      throw new Error('unused');
    },
  };
  const config = loadConfig({
    DATABASE_URL: database.url,
    DATA_DIR: path.join(dir, 'data'),
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '2',
    WORKER_POLL_SECONDS: '2',
  });
  const runtime = await startRuntime(config, createLogger('silent'), {
    workers: true,
    pipelines: async () => ({ page, export: noExport }),
  });
  console.log(
    `# hwr engine benchmarks (${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, load ${os.loadavg()[0].toFixed(1)}, embedded PostgreSQL 18, synchronous_commit on)\n`,
  );

  await benchAppends(runtime, 1, 1);
  await benchAppends(runtime, 8, 1);
  await benchAppends(runtime, 8, 10);
  await benchAppendsWithoutSyncCommit();
  await benchPickup(runtime, pageStarts);
  await benchRebuild(runtime);
  await runtime.stop();
} finally {
  await database.stop();
  await rm(dir, { recursive: true, force: true });
}

function event(n: number): DomainEvent {
  return { type: 'WebhookSecretRotated', data: { webhookSecretSha256: `bench-${n}`, rotatedAt: new Date().toISOString() } };
}

async function benchAppends(runtime: Pick<Runtime, 'db'>, writers: number, perTransaction: number, label = ''): Promise<void> {
  const deadline = performance.now() + appendSeconds * 1000;
  let appended = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      const stream = `account-${randomUUID()}`;
      let version = 0;
      while (performance.now() < deadline) {
        await appendToStream(
          runtime.db.pool,
          stream,
          version,
          Array.from({ length: perTransaction }, (_, i) => event(version + i)),
        );
        version += perTransaction;
        appended += perTransaction;
      }
    }),
  );
  row(
    `append, ${writers} writer${writers > 1 ? 's' : ''}, ${perTransaction} event${perTransaction > 1 ? 's' : ''}/transaction${label}`,
    `${Math.round(appended / appendSeconds).toLocaleString('en')} events/s`,
  );
}

/** The store's own cost, without waiting for the disk: a comparison, not a setting we run with. */
async function benchAppendsWithoutSyncCommit(): Promise<void> {
  const scratch = await startEmbeddedPostgres({
    dataDir: path.join(dir, 'pg-async'),
    port: await freePort(),
    settings: ['-c', 'synchronous_commit=off'],
  });
  const db = openDatabase(scratch.url);
  try {
    await migrate(db.pool);
    await benchAppends({ db }, 1, 1, ' [synchronous_commit=off]');
    await benchAppends({ db }, 8, 1, ' [synchronous_commit=off]');
  } finally {
    await db.close();
    await scratch.stop();
  }
}

async function benchPickup(runtime: Runtime, pageStarts: Map<string, number>): Promise<void> {
  const account = await createAccount(runtime.bus, `bench-${randomUUID().slice(0, 8)}`);
  const latencies: number[] = [];
  for (let i = 0; i < 40; i++) {
    const jobId = randomUUID();
    const submitted = performance.now();
    await runtime.bus.job(jobId, {
      type: 'SubmitJob',
      jobId,
      accountId: account.accountId,
      keyId: null,
      pages: [{ pageNumber: 1, name: '1.png', blobKey: `jobs/${jobId}/pages/0001.png`, sha256: '0', bytes: 1 }],
      options: { llmTier: 'cheap', preset: 'generic', pipelineSteps: ['layout', 'export'], pdfFormat: 'none', webhookUrl: null },
      uploadKey: 'none',
      now: new Date(),
      retentionSeconds: 3600,
      idempotency: null,
    });
    while (!pageStarts.has(jobId)) await new Promise((resolve) => setTimeout(resolve, 1));
    latencies.push(pageStarts.get(jobId)! - submitted);
    await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 300)); // workers idle again
  }
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  row(
    'JobQueued -> first page task started (idle workers)',
    `p50 ${pct(50)} ms, p99 ${pct(99)} ms (n=${latencies.length}, poll interval 2 s)`,
  );
}

async function benchRebuild(runtime: Runtime): Promise<void> {
  const existing = Number((await runtime.db.pool.query('select count(*) as n from events')).rows[0].n);
  const missing = Math.max(0, rebuildEvents - existing);
  // Realistic job histories: queued, started, 3 steps + completion per page, export, done.
  const account = await createAccount(runtime.bus, `rebuild-${randomUUID().slice(0, 8)}`);
  const pagesPerJob = 10;
  const eventsPerJob = 2 + pagesPerJob * 4 + 2;
  const jobs = Math.ceil(missing / eventsPerJob);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async (_, worker) => {
      for (let j = worker; j < jobs; j += 8) await writeJobHistory(runtime, account.accountId, pagesPerJob);
    }),
  );
  const total = Number((await runtime.db.pool.query('select count(*) as n from events')).rows[0].n);
  row(
    'loading the log (8 writers, whole job histories)',
    `${total.toLocaleString('en')} events in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const report = await rebuildProjections(runtime.db.pool);
  row(
    'rebuild (replay into scratch tables + swap)',
    `${Math.round(report.events / report.seconds).toLocaleString('en')} events/s (${report.events.toLocaleString('en')} events, ${report.seconds.toFixed(2)} s)`,
  );
  const verifyStarted = performance.now();
  const verify = await verifyProjections(runtime.db.pool);
  const verifySeconds = (performance.now() - verifyStarted) / 1000;
  row(
    'verify (replay + diff with live tables)',
    `${Math.round(verify.events / verifySeconds).toLocaleString('en')} events/s, ${verify.differences.length} differences`,
  );
}

async function writeJobHistory(runtime: Runtime, accountId: string, pages: number): Promise<void> {
  const jobId = randomUUID();
  const t = new Date().toISOString();
  const sources = Array.from({ length: pages }, (_, i) => ({
    pageNumber: i + 1,
    name: `${i + 1}.jpg`,
    blobKey: `jobs/${jobId}/pages/${i + 1}.jpg`,
    sha256: 'x',
    bytes: 1,
  }));
  const events: DomainEvent[] = [
    {
      type: 'JobQueued',
      data: {
        jobId,
        accountId,
        keyId: null,
        pageCount: pages,
        pages: sources,
        options: {
          llmTier: 'balanced',
          preset: 'generic',
          pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
          pdfFormat: 'pdfa-2b',
          webhookUrl: null,
        },
        uploadKey: 'u',
        createdAt: t,
        expiresAt: t,
        idempotency: null,
      },
    },
    { type: 'JobStarted', data: { startedAt: t } },
  ];
  for (let page = 1; page <= pages; page++) {
    for (const step of ['layout', 'recognition', 'correction'] as const) events.push({ type: 'StepStarted', data: { page, step } });
    events.push({ type: 'PageCompleted', data: { page, resultKey: `r${page}`, lineCount: 20, warnings: [], correction: null } });
  }
  events.push({ type: 'StepStarted', data: { page: null, step: 'export' } });
  events.push({
    type: 'JobSucceeded',
    data: { finishedAt: t, archiveKey: 'a', archiveBytes: 1, archiveSha256: 'x', warningMessage: null },
  });
  // The whole history in one append: the rebuild replays it event by event all the same.
  await appendToStream(runtime.db.pool, `job-${jobId}`, 0, events);
}
