// How the job engine scales with the pages of one job (docs/benchmarks.md, "Job scale").
//
//  1. Commands alone: every page of one job runs StartStep × 3 and CompletePage through the
//     command bus, N pages at C at once, no pg-boss in the loop. The same workload through
//     the whole-stream path the engine used before (read and fold the whole job stream, append
//     at its version) is the peer, in the same process on the same database.
//  2. Through the workers: a job of N pages with a stub page pipeline (no models) at
//     WORKER_CONCURRENCY=C and PAGE_RETRY_LIMIT=0, submitted and waited for like a client would.
//  3. One row with the real pipeline on fixture pages.
//
// `npm run bench:job-scale [-- --quick] [-- --no-real] [-- --commands-only] [-- --sizes 10,1000] [-- --concurrency 1,64]`. Fresh embedded PostgreSQL in a temp directory.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { jobStreamId } from '../domain/events.ts';
import { decideJob } from '../domain/job-decide.ts';
import { evolveJob } from '../domain/job.ts';
import type { CommandBus, PageCommand, PageView } from '../src/use-cases/command-bus.ts';
import { createAccount } from '../src/use-cases/accounts.ts';
import { loadConfig } from '../src/platform/config.ts';
import { startEmbeddedPostgres, freePort } from '../src/db/embedded-postgres.ts';
import { createLogger } from '../src/platform/logger.ts';
import type { ExportPipeline, JobOptions, PagePipeline, PageSource } from '../src/pipeline/pipeline.ts';
import type { PageResult } from '../src/recognition/page/page-result.ts';
import { startRuntime, type Runtime } from '../src/runtime/runtime.ts';
import { appendToStream } from '../src/store/append-to-stream.ts';
import { ConcurrencyError } from '../src/store/concurrency-error.ts';
import { scheduleReactions } from '../src/queue/boss.ts';
import { reactionsTo } from '../src/queue/reactions.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const withReal = !args.includes('--no-real');
const listOption = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1].split(',').map(Number) : null);
const SIZES = listOption('--sizes') ?? (quick ? [10, 100] : [10, 50, 100, 1000]);
const CONCURRENCY = listOption('--concurrency') ?? (quick ? [1, 8] : [1, 8, 32, 64]);
const workersToo = !args.includes('--commands-only');
const STEPS = ['layout', 'recognition', 'correction'] as const;
const OPTIONS: JobOptions = {
  llmTier: 'cheap',
  preset: 'generic',
  pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
  pdfFormat: 'pdfa-2b',
  webhookUrl: null,
};

const dir = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-job-scale-'));
const database = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
const envFor = (concurrency: number) => ({
  DATABASE_URL: database.url,
  DATA_DIR: path.join(dir, 'data'),
  LOG_LEVEL: 'silent',
  WORKER_CONCURRENCY: String(concurrency),
  PAGE_RETRY_LIMIT: '0',
  WORKER_POLL_SECONDS: '0.5',
  SUPERVISE_INTERVAL_SECONDS: '5',
});

try {
  console.log(
    `# hwr job-scale benchmark (${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, load ${os.loadavg()[0].toFixed(1)}, embedded PostgreSQL 18, Node ${process.versions.node})\n`,
  );
  const direct = await startRuntime(loadConfig(envFor(8)), createLogger('silent'), { workers: false });
  const accountId = (await createAccount(direct.bus, 'bench')).accountId;
  console.log('## 1. Page commands alone (StartStep × 3 + CompletePage per page), scoped appends vs whole-stream peer\n');
  console.log(
    '| pages | at once | path | completions/s | commands/s | conflicts/page | engine ms/page | p50 / p99 ms, first 10 % | p50 / p99 ms, last 10 % |',
  );
  console.log('|---:|---:|---|---:|---:|---:|---:|---|---|');
  for (const pages of SIZES) {
    for (const concurrency of CONCURRENCY) {
      printCommandRow(pages, concurrency, 'scoped (now)', await driveCommands(direct, accountId, pages, concurrency, 'scoped'));
      // The peer's cost grows with the square of the pages: its 1,000-page rows would take most of an hour.
      if (pages <= 100) {
        printCommandRow(
          pages,
          concurrency,
          'whole stream (before)',
          await driveCommands(direct, accountId, pages, concurrency, 'whole-stream'),
        );
      }
    }
  }
  await direct.stop();

  if (workersToo) {
    console.log('\n## 2. Through the workers, stub page pipeline, PAGE_RETRY_LIMIT=0\n');
    console.log('| pages | WORKER_CONCURRENCY | ended | wall s | pages/s | ms/page | conflicts/page | failed page attempts |');
    console.log('|---:|---:|---|---:|---:|---:|---:|---:|');
    for (const pages of SIZES) {
      for (const concurrency of CONCURRENCY) {
        if (pages === 1000 && concurrency === 1 && !quick) continue; // 1,000 one at a time says nothing the 50-page row does not
        const row = await throughWorkers(pages, concurrency, stubPipeline());
        console.log(
          `| ${pages} | ${concurrency} | ${row.state} | ${row.seconds.toFixed(1)} | ${(pages / row.seconds).toFixed(0)} | ${((row.seconds * 1000) / pages).toFixed(1)} | ${(row.conflicts / pages).toFixed(2)} | ${row.failedAttempts} |`,
        );
      }
    }
    if (withReal) {
      const { defaultPipelines } = await import('../src/pipeline/default-pipelines.ts');
      const fixture = path.resolve(import.meta.dirname, '../test/fixtures/pages');
      const images = ['peraire_test_B.12.japon3_0048.jpg', 'fondue_en_print_dracula_page_51.png'];
      const bodies = await Promise.all(images.map((name) => readFile(path.join(fixture, name))));
      const config = loadConfig({ ...envFor(2), CORRECTION_PROVIDER: 'none' });
      const pipelines = await defaultPipelines(config, createLogger('silent'));
      const pages = 8;
      const row = await throughWorkers(pages, 2, pipelines.page, (page) => ({ name: images[page % 2], body: bodies[page % 2] }));
      await pipelines.close();
      console.log(
        `| ${pages} (real pipeline, fixture pages) | 2 | ${row.state} | ${row.seconds.toFixed(1)} | ${(pages / row.seconds).toFixed(2)} | ${((row.seconds * 1000) / pages).toFixed(0)} | ${(row.conflicts / pages).toFixed(2)} | ${row.failedAttempts} |`,
      );
    }
  }
} finally {
  await database.stop();
  await rm(dir, { recursive: true, force: true });
}

interface CommandRun {
  seconds: number;
  commands: number;
  conflicts: number;
  engineMs: number;
  first: number[];
  last: number[];
}

function printCommandRow(pages: number, concurrency: number, label: string, run: CommandRun): void {
  const pct = (values: number[], q: number) => {
    const sorted = values.toSorted((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  };
  const spread = (values: number[]) => `${pct(values, 0.5).toFixed(1)} / ${pct(values, 0.99).toFixed(1)}`;
  console.log(
    `| ${pages} | ${concurrency} | ${label} | ${(pages / run.seconds).toFixed(0)} | ${(run.commands / run.seconds).toFixed(0)} | ${(run.conflicts / pages).toFixed(2)} | ${(run.engineMs / pages).toFixed(2)} | ${spread(run.first)} | ${spread(run.last)} |`,
  );
}

async function driveCommands(
  runtime: Runtime,
  accountId: string,
  pages: number,
  concurrency: number,
  path: 'scoped' | 'whole-stream',
): Promise<CommandRun> {
  const jobId = await submit(runtime, accountId, pages);
  await runtime.bus.job(jobId, { type: 'StartJob', now: new Date() });
  const run: CommandRun = { seconds: 0, commands: 0, conflicts: 0, engineMs: 0, first: [], last: [] };
  const conflictsBefore = runtime.bus.conflicts;
  let next = 1;
  let completed = 0;
  // Like the page worker: the page's view is read once, then carried from command to command.
  const views = new Map<number, PageView | null>();
  const send = async (command: PageCommand) => {
    const started = performance.now();
    if (path === 'scoped') {
      if (!views.has(command.page)) views.set(command.page, await runtime.bus.loadPageView(runtime.db.pool, jobId, command.page));
      const { view } = await runtime.bus.page(jobId, command, {}, views.get(command.page) ?? undefined);
      views.set(command.page, view);
    } else run.conflicts += await wholeStreamCommand(runtime.bus, jobId, command);
    const ms = performance.now() - started;
    run.engineMs += ms;
    run.commands++;
    if (completed < pages * 0.1) run.first.push(ms);
    else if (completed >= pages * 0.9) run.last.push(ms);
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let page = next++; page <= pages; page = next++) {
        for (const step of STEPS) await send({ type: 'StartStep', page, step, now: new Date() });
        await send({ type: 'CompletePage', page, resultKey: `r/${page}`, lineCount: 1, warnings: [], correction: null, now: new Date() });
        completed++;
      }
    }),
  );
  run.seconds = (performance.now() - started) / 1000;
  // The job's page and export tasks would otherwise wait for the workers of part 2.
  await runtime.db.pool.query(`delete from pgboss.job where data->>'jobId' = $1`, [jobId]);
  if (path === 'scoped') run.conflicts = runtime.bus.conflicts - conflictsBefore;
  return run;
}

/** The engine before page scopes: fold the whole stream, append at its version, retry on conflict. Returns the conflicts. */
async function wholeStreamCommand(bus: CommandBus, jobId: string, command: PageCommand): Promise<number> {
  for (let conflicts = 0; ; conflicts++) {
    const before = await bus.loadJob(bus.db.pool, jobId);
    const events = decideJob(before, command);
    if (events.length === 0) return conflicts;
    try {
      await bus.db.transaction(async (client) => {
        await appendToStream(client, jobStreamId(jobId), before.version, events, { accountId: before.accountId });
        await scheduleReactions(bus.boss, client, reactionsTo(events, events.reduce(evolveJob, before)));
      });
      return conflicts;
    } catch (error) {
      if (!(error instanceof ConcurrencyError)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * (conflicts + 1)));
    }
  }
}

async function submit(
  runtime: Runtime,
  accountId: string,
  pages: number,
  page?: (n: number) => { name: string; body: Buffer },
): Promise<string> {
  const jobId = randomUUID();
  const sources: PageSource[] = [];
  for (let n = 1; n <= pages; n++) {
    const { name, body } = page?.(n) ?? { name: `${n}.png`, body: Buffer.from(`page ${n}`) };
    const blobKey = `jobs/${jobId}/pages/${String(n).padStart(4, '0')}${path.extname(name)}`;
    await runtime.blobs.put(blobKey, body);
    sources.push({ pageNumber: n, name, blobKey, sha256: createHash('sha256').update(body).digest('hex'), bytes: body.length });
  }
  const command = {
    type: 'SubmitJob' as const,
    jobId,
    accountId,
    keyId: null,
    pages: sources,
    options: OPTIONS,
    uploadKey: `jobs/${jobId}/upload.zip`,
    now: new Date(),
    retentionSeconds: 3600,
    idempotency: null,
  };
  await runtime.bus.job(jobId, command);
  return jobId;
}

async function throughWorkers(
  pages: number,
  concurrency: number,
  pagePipeline: PagePipeline,
  page?: (n: number) => { name: string; body: Buffer },
): Promise<{ state: string; seconds: number; conflicts: number; failedAttempts: number }> {
  const runtime = await startRuntime(loadConfig(envFor(concurrency)), createLogger('silent'), {
    workers: true,
    pipelines: async () => ({ page: pagePipeline, export: stubExport() }),
  });
  try {
    const accountId = (await createAccount(runtime.bus, `bench-${randomUUID().slice(0, 8)}`)).accountId;
    const conflictsBefore = runtime.bus.conflicts;
    const started = performance.now();
    const jobId = await submit(runtime, accountId, pages, page);
    let state = 'queued';
    while (state === 'queued' || state === 'processing') {
      await new Promise((resolve) => setTimeout(resolve, 50));
      state = (await runtime.db.pool.query<{ state: string }>('select state from job_status where job_id = $1', [jobId])).rows[0].state;
    }
    const seconds = (performance.now() - started) / 1000;
    const failed = await runtime.db.pool.query<{ n: number }>(
      `select count(*)::int as n from pgboss.job where name = 'hwr-page' and data->>'jobId' = $1 and state = 'failed'`,
      [jobId],
    );
    return { state, seconds, conflicts: runtime.bus.conflicts - conflictsBefore, failedAttempts: failed.rows[0].n };
  } finally {
    await runtime.stop();
  }
}

function stubPipeline(): PagePipeline {
  return {
    async processPage(task, context) {
      for (const step of STEPS) await context.enterStep(step);
      return stubResult(task.page.pageNumber, task.page.name);
    },
  };
}

function stubExport(): ExportPipeline {
  return {
    async exportJob(task, context) {
      const body = Buffer.from(JSON.stringify({ jobId: task.jobId, pages: task.pages.length }));
      const info = await context.blobs.put(task.archiveKey, body);
      return { archiveKey: task.archiveKey, bytes: info.bytes, sha256: createHash('sha256').update(body).digest('hex') };
    },
  };
}

function stubResult(pageNumber: number, name: string): PageResult {
  return {
    schema: 'hwr.page-result/1',
    pageNumber,
    image: { name, width: 10, height: 10, sha256: '0'.repeat(64), format: 'png', dpi: null },
    regions: [],
    producer: { software: 'bench', version: '0', models: [] },
    warnings: [],
  };
}
