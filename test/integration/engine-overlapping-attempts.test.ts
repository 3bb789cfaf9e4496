// Two attempts of one task at once: pg-boss retries a task whose heartbeat lapsed (a worker cut off
// from the database) while its first attempt may still be running. Each attempt writes its own
// page result and archive (blob-keys.ts), so the attempt that loses neither writes over nor
// deletes what the winner recorded. Before, an export attempt that lost deleted the done job's
// archive (billed, and the download answered 410), and a page attempt that lost wrote its result
// over the one the job was billed for.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, test } from 'node:test';
import type { Job } from 'pg-boss';
import type { BlobStore } from '../../src/blobs/blob-store.ts';
import type { ExportPipeline, PagePipeline } from '../../src/pipeline/pipeline.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { createExportHandler } from '../../src/workers/tasks/export-worker.ts';
import { createPageHandler } from '../../src/workers/tasks/page-worker.ts';
import type { ExportTaskData, PageTaskData } from '../../src/queue/queues.ts';
import { HandedBack } from '../../src/workers/mechanics/task-errors.ts';
import { createTestDatabase } from '../support/database.ts';
import { submitTestJob, TEST_PAGE_PNG } from '../support/engine.ts';
import { createCredentials, startApiServer } from '../support/http-client.ts';
import { sleep, testExportPipeline, tinyPageResult } from '../support/test-pipelines.ts';

// The API without workers: the test runs the task handlers itself, as two workers would.
const api = await startApiServer(await createTestDatabase());
after(() => api.close());
const { runtime } = api;

/** Attempt `retryCount` of the task `id`, as pg-boss hands it to a handler. */
function attempt<T extends object>(id: string, data: T, retryCount: number): Job<T> {
  return { id, name: 'test', data, retryCount, signal: new AbortController().signal } as unknown as Job<T>;
}

/** Reads a one-page job's page as a worker would, so that its export can run. */
async function completeOnlyPage(jobId: string): Promise<void> {
  const pages: PagePipeline = {
    async processPage(task, context) {
      await context.enterStep('layout');
      return tinyPageResult(task, TEST_PAGE_PNG);
    },
  };
  await createPageHandler({ bus: runtime.bus, blobs: runtime.blobs, pipeline: pages, retryLimit: 2, log: runtime.log })(
    attempt<PageTaskData>('page-task', { jobId, page: 1 }, 0),
  );
}

const jobEvents = async (jobId: string) =>
  (
    await runtime.db.pool.query<{ type: string; data: Record<string, unknown> }>(
      'select type, data from events where stream_id = $1 order by stream_version',
      [`job-${jobId}`],
    )
  ).rows;

for (const [when, stallMs] of [
  ['after the job-end watch saw the job done', 1500],
  ['before the job-end watch polled (its SucceedJob records nothing)', 250],
] as const) {
  test(`two export attempts at once, the stalled one ending ${when}: done once, the recorded archive stored and downloading, the other gone`, async () => {
    const credentials = await createCredentials(runtime);
    const jobId = await submitTestJob(runtime, credentials.accountId, 1);
    let calls = 0;
    await completeOnlyPage(jobId);
    const exporter: ExportPipeline = {
      async exportJob(task, context) {
        const mine = ++calls;
        const body = Buffer.from(`archive of ${task.jobId} by attempt ${mine}`);
        const info = await context.blobs.put(task.archiveKey, body);
        // The first attempt stalls (its worker cut off) and finishes after the retry succeeded.
        if (mine === 1) await sleep(stallMs);
        return { archiveKey: task.archiveKey, bytes: info.bytes, sha256: createHash('sha256').update(body).digest('hex') };
      },
    };
    const handler = createExportHandler({ bus: runtime.bus, blobs: runtime.blobs, pipeline: exporter, retryLimit: 2, log: runtime.log });
    const first = handler(attempt<ExportTaskData>('export-task', { jobId }, 0));
    await sleep(100);
    await Promise.all([first, handler(attempt<ExportTaskData>('export-task', { jobId }, 1))]);

    const succeeded = (await jobEvents(jobId)).filter((event) => event.type === 'JobSucceeded');
    assert.equal(succeeded.length, 1);
    const archiveKey = succeeded[0].data.archiveKey as string;
    const stored = await runtime.blobs.get(archiveKey);
    assert.equal(createHash('sha256').update(stored).digest('hex'), succeeded[0].data.archiveSha256);
    const download = await fetch(`${api.baseUrl}/v1/process-scan/${jobId}/result`, { headers: { 'X-API-Key': credentials.key } });
    assert.equal(download.status, 200);
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), stored);
    assert.equal((await runtime.db.pool.query('select count(*)::int as n from billing where job_id = $1', [jobId])).rows[0].n, 1);
    // The losing attempt's archive is gone; only the recorded one is left.
    const archives = (await runtime.blobs.list(`jobs/${jobId}`)).filter((name) => name.endsWith('.zip') && name !== 'upload.zip');
    assert.deepEqual(archives, [archiveKey.split('/').at(-1)]);
  });
}

test("the answer to an export's SucceedJob lost after it committed: the run again keeps the recorded archive", async () => {
  const credentials = await createCredentials(runtime);
  const jobId = await submitTestJob(runtime, credentials.accountId, 1);
  await completeOnlyPage(jobId);
  // The commit goes through; its answer is lost to a reset seen after the job-end watch saw the job done.
  const bus = Object.create(runtime.bus) as typeof runtime.bus;
  bus.job = async (...args: Parameters<typeof runtime.bus.job>) => {
    const result = await runtime.bus.job(...args);
    if (typeof args[1] === 'object' && args[1].type === 'SucceedJob') {
      await sleep(700);
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    }
    return result;
  };
  await createExportHandler({ bus, blobs: runtime.blobs, pipeline: testExportPipeline(), retryLimit: 2, log: runtime.log })(
    attempt<ExportTaskData>('export-task', { jobId }, 0),
  );
  const succeeded = (await jobEvents(jobId)).filter((event) => event.type === 'JobSucceeded');
  assert.equal(succeeded.length, 1);
  assert.ok(await runtime.blobs.stat(succeeded[0].data.archiveKey as string), 'the recorded archive is stored');
  const download = await fetch(`${api.baseUrl}/v1/process-scan/${jobId}/result`, { headers: { 'X-API-Key': credentials.key } });
  assert.equal(download.status, 200);
});

test('two page attempts at once: the result recorded is the one exported; the other is dropped', async () => {
  const credentials = await createCredentials(runtime);
  const jobId = await submitTestJob(runtime, credentials.accountId, 1);
  let calls = 0;
  const pipeline: PagePipeline = {
    async processPage(task, context) {
      const mine = ++calls;
      await context.enterStep('layout');
      // Both in flight; the first finishes first, with correction applied, the retry later without.
      await sleep(mine === 1 ? 200 : 700);
      const result: PageResult = tinyPageResult(task, TEST_PAGE_PNG);
      result.regions[0].lines[0].text = mine === 1 ? 'corrected by attempt 1' : 'raw text of attempt 2';
      if (mine === 1)
        result.correction = { provider: 'p', model: 'm', refusedLines: [], inputTokens: 10, outputTokens: 10, outcome: 'applied' };
      return result;
    },
  };
  const handler = createPageHandler({ bus: runtime.bus, blobs: runtime.blobs, pipeline, retryLimit: 2, log: runtime.log });
  await Promise.all([
    handler(attempt<PageTaskData>('page-task', { jobId, page: 1 }, 0)),
    sleep(50).then(() => handler(attempt<PageTaskData>('page-task', { jobId, page: 1 }, 1))),
  ]);
  await createExportHandler({ bus: runtime.bus, blobs: runtime.blobs, pipeline: testExportPipeline(), retryLimit: 2, log: runtime.log })(
    attempt<ExportTaskData>('export-task', { jobId }, 0),
  );

  const events = await jobEvents(jobId);
  const completed = events.filter((event) => event.type === 'PageCompleted');
  assert.equal(completed.length, 1);
  assert.equal((completed[0].data.correction as { outcome: string }).outcome, 'applied');
  const archiveKey = events.find((event) => event.type === 'JobSucceeded')?.data.archiveKey as string;
  assert.deepEqual(JSON.parse((await runtime.blobs.get(archiveKey)).toString()).pages, ['corrected by attempt 1']);
  const billed = (await runtime.db.pool.query('select corrected_pages from billing where job_id = $1', [jobId])).rows[0];
  assert.equal(billed.corrected_pages, 1);
  // Only the recorded result is stored.
  assert.deepEqual(await runtime.blobs.list(`jobs/${jobId}/results`), [(completed[0].data.resultKey as string).split('/').at(-1)]);
});

test('a claim handed back at shutdown after storing its result, before recording it, leaves no file (the next claim writes its own)', async () => {
  const credentials = await createCredentials(runtime);
  const jobId = await submitTestJob(runtime, credentials.accountId, 1);
  const controller = new AbortController();
  // The worker stops just as the result is stored: the shutdown hands the task back, and the
  // write's caller sees the abort.
  const blobs: BlobStore = Object.assign(Object.create(runtime.blobs) as BlobStore, {
    async put(key: string, body: Parameters<BlobStore['put']>[1]) {
      const info = await runtime.blobs.put(key, body);
      if (key.includes('/results/')) {
        controller.abort(new HandedBack());
        throw controller.signal.reason;
      }
      return info;
    },
  });
  const pages: PagePipeline = {
    async processPage(task, context) {
      await context.enterStep('layout');
      return tinyPageResult(task, TEST_PAGE_PNG);
    },
  };
  const task = { ...attempt<PageTaskData>('page-task', { jobId, page: 1 }, 0), signal: controller.signal } as Job<PageTaskData>;
  await createPageHandler({ bus: runtime.bus, blobs, pipeline: pages, retryLimit: 2, log: runtime.log })(task);
  assert.deepEqual(await runtime.blobs.list(`jobs/${jobId}/results`), []);
  assert.equal((await jobEvents(jobId)).filter((event) => event.type === 'PageCompleted').length, 0);
});
