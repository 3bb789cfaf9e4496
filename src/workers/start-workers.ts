// Registers this process's pg-boss workers. Any worker process on any machine can
// take any task; scale out by starting more `hwr serve --role worker` processes.
import type { Job, PgBoss } from 'pg-boss';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { CommandBus } from '../commands/command-bus.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ExportPipeline, PagePipeline } from '../pipeline/pipeline.ts';
import { createCallbackHandler } from './callback-worker.ts';
import { expireResults } from './expire-results-worker.ts';
import { createExportHandler } from './export-worker.ts';
import { createPageHandler } from './page-worker.ts';
import { QUEUES, type CallbackTaskData, type ExportTaskData, type PageTaskData } from './queues.ts';

export interface WorkerDeps {
  boss: PgBoss;
  bus: CommandBus;
  blobs: BlobStore;
  config: Config;
  log: Logger;
  pagePipeline: PagePipeline;
  exportPipeline: ExportPipeline;
}

export async function startWorkers(deps: WorkerDeps): Promise<void> {
  const { boss, config } = deps;
  // NOTIFY wakes idle workers the moment a task is inserted. After a task, a worker
  // fetches again at once when the task took longer than the interval, else after it;
  // so the interval also bounds how long a short task's successor may wait.
  const polling = {
    pollingIntervalSeconds: config.workers.pollingIntervalSeconds,
    notifyPollingIntervalSeconds: config.workers.pollingIntervalSeconds,
  };
  const log = deps.log.child({ role: 'worker' });
  const onePerCall = <T>(handler: (job: Job<T>) => Promise<void>) => async (jobs: Job<T>[]) => {
    for (const job of jobs) await handler(job);
  };

  await boss.work<PageTaskData>(
    QUEUES.page,
    { ...polling, localConcurrency: config.workers.pageConcurrency, batchSize: 1 },
    onePerCall(createPageHandler({ bus: deps.bus, blobs: deps.blobs, pipeline: deps.pagePipeline, retryLimit: config.workers.pageRetryLimit, log })),
  );
  await boss.work<ExportTaskData>(
    QUEUES.export,
    { ...polling, localConcurrency: config.workers.exportConcurrency, batchSize: 1 },
    onePerCall(createExportHandler({ bus: deps.bus, blobs: deps.blobs, pipeline: deps.exportPipeline, retryLimit: config.workers.pageRetryLimit, log })),
  );
  await boss.work<CallbackTaskData>(
    QUEUES.callback,
    { ...polling, localConcurrency: 4, batchSize: 1 },
    onePerCall(createCallbackHandler({ bus: deps.bus, config, log })),
  );
  await boss.work(QUEUES.expireResults, { ...polling, batchSize: 1 }, async () => {
    await expireResults({ bus: deps.bus, blobs: deps.blobs, log });
  });
  await boss.schedule(QUEUES.expireResults, '* * * * *');
}
