// Engine test helpers: a runtime on a test database, an account, and submitted jobs of real
// (small) page images; the waits and checks the engine tests share (test/README.md).
import assert from 'node:assert/strict';
import { randomUUID, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import type { ExportPipeline, JobOptions, PagePipeline, PageSource } from '../../src/pipeline/pipeline.ts';
import { type Runtime, type RuntimeOptions, startRuntime } from '../../src/runtime/runtime.ts';
import { createAccount } from '../../src/use-cases/accounts.ts';

export async function testConfig(databaseUrl: string, env: Record<string, string> = {}, dataDir?: string): Promise<Config> {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'hwr-test-data-'))),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WORKER_POLL_SECONDS: '0.5',
    TASK_HEARTBEAT_SECONDS: '10',
    SUPERVISE_INTERVAL_SECONDS: '1',
    PAGE_RETRY_LIMIT: '1',
    WORKER_CONCURRENCY: '2',
    CALLBACK_RETRY_SCALE: '0.01',
    ...env,
  });
}

export async function startTestRuntime(
  config: Config,
  pipelines?: { page: PagePipeline; export: ExportPipeline; close?(): Promise<void> },
  more: Pick<RuntimeOptions, 'trainer' | 'trainerTuning'> = {},
): Promise<Runtime> {
  return startRuntime(config, createLogger(config.logLevel), {
    workers: pipelines !== undefined,
    pipelines: pipelines ? async () => pipelines : undefined,
    ...more,
  });
}

export const DEFAULT_OPTIONS: JobOptions = {
  llmTier: 'balanced',
  preset: 'generic',
  pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
  pdfFormat: 'pdfa-2b',
  webhookUrl: null,
};

/**
 * The page image of the engine tests' jobs: a real PNG, a 320×44 strip of handwriting
 * (test/fixtures/zips/images, from a Zola manuscript), small enough for hundreds of pages.
 */
export const TEST_PAGE_PNG = readFileSync(path.resolve(import.meta.dirname, '../fixtures/zips/images/line-6.png'));

/**
 * Submits a job of `pageCount` small stored pages directly through the command bus. `jobId`:
 * given when a pipeline must know the job before its pages start; `image`: each page's bytes
 * (TEST_PAGE_PNG unless a test needs a broken one).
 */
export async function submitTestJob(
  runtime: Runtime,
  accountId: string,
  pageCount: number,
  options: Partial<JobOptions> = {},
  { jobId = randomUUID(), image = TEST_PAGE_PNG }: { jobId?: string; image?: Buffer } = {},
): Promise<string> {
  const pages: PageSource[] = [];
  for (let page = 1; page <= pageCount; page++) {
    const body = image;
    const blobKey = `jobs/${jobId}/pages/${String(page).padStart(4, '0')}.png`;
    await runtime.blobs.put(blobKey, body);
    pages.push({
      pageNumber: page,
      name: `${page}.png`,
      blobKey,
      sha256: createHash('sha256').update(body).digest('hex'),
      bytes: body.length,
    });
  }
  await runtime.bus.job(jobId, {
    type: 'SubmitJob',
    jobId,
    accountId,
    keyId: null,
    pages,
    options: { ...DEFAULT_OPTIONS, ...options },
    uploadKey: `jobs/${jobId}/upload.zip`,
    now: new Date(),
    retentionSeconds: runtime.config.results.retentionSeconds,
    idempotency: null,
  });
  return jobId;
}

export async function testAccount(runtime: Runtime, name = `acct-${randomUUID().slice(0, 8)}`): Promise<string> {
  return (await createAccount(runtime.bus, name)).accountId;
}

export async function waitForJobState(runtime: Runtime, jobId: string, states: string[], timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await runtime.db.pool.query<{ state: string }>('select state from job_status where job_id = $1', [jobId]);
    const state = result.rows[0]?.state;
    if (state && states.includes(state)) return state;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${state} after ${timeoutMs} ms (waiting for ${states.join('|')})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The job's history has pages 1..`pageCount` completed once each and one JobSucceeded, and billing one row for it. */
export async function assertCompletedOnce(runtime: Runtime, jobId: string, pageCount: number): Promise<void> {
  const events = (
    await runtime.db.pool.query<{ type: string; data: { page?: number } }>(
      'select type, data from events where stream_id = $1 order by stream_version',
      [`job-${jobId}`],
    )
  ).rows;
  const completed = events.filter((event) => event.type === 'PageCompleted').map((event) => event.data.page ?? 0);
  assert.deepEqual(
    completed.sort((a, b) => a - b),
    Array.from({ length: pageCount }, (_, index) => index + 1),
  );
  assert.equal(events.filter((event) => event.type === 'JobSucceeded').length, 1);
  assert.equal((await runtime.db.pool.query('select count(*)::int as n from billing where job_id = $1', [jobId])).rows[0].n, 1);
}

/**
 * No attempt of the job's page and export tasks was spent: each completed on its first. The job
 * is done once JobSucceeded is appended; pg-boss marks the export task completed when its handler
 * returns, a moment later (a loaded machine showed it still active), so that moment is waited for.
 */
export async function assertNoAttemptSpent(runtime: Runtime, jobId: string, pageCount: number): Promise<void> {
  const taskStates = () =>
    runtime.db.pool.query<{ name: string; state: string; retry_count: number }>(
      `select name, state, retry_count from pgboss.job where name in ('hwr-page', 'hwr-export') and data->>'jobId' = $1`,
      [jobId],
    );
  let tasks = await taskStates();
  for (const deadline = Date.now() + 10_000; tasks.rows.some((task) => task.state === 'active') && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    tasks = await taskStates();
  }
  assert.equal(tasks.rows.length, pageCount + 1);
  assert.deepEqual(
    tasks.rows.filter((task) => task.retry_count !== 0 || task.state !== 'completed'),
    [],
  );
}
