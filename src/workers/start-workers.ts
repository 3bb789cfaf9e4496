// Registers this process's pg-boss workers. Any worker process on any machine can
// take any task; scale out by starting more `hwr serve --role worker` processes.
import type { Job, PgBoss } from '../queue/boss.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { CommandBus } from '../use-cases/command-bus.ts';
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { ExportPipeline, PagePipeline } from '../pipeline/pipeline.ts';
import { createCallbackHandler } from './tasks/callback-worker.ts';
import { expireResults } from './tasks/expire-results-worker.ts';
import { createExportHandler } from './tasks/export-worker.ts';
import { startLostTaskWorkers } from './sweeps/lost-tasks.ts';
import { sweepOrphanBlobs, sweepOrphanModelFolders, sweepStalledWrites } from './sweeps/orphan-blobs.ts';
import { createPageHandler } from './tasks/page-worker.ts';
import { QUEUES, type CallbackTaskData, type ExportTaskData, type PageTaskData } from '../queue/queues.ts';
import { TaskTracker } from './mechanics/shutdown.ts';

export interface WorkerDeps {
  boss: PgBoss;
  bus: CommandBus;
  blobs: BlobStore;
  config: Config;
  log: Logger;
  pagePipeline: PagePipeline;
  exportPipeline: ExportPipeline;
}

/** The running workers: `stop` drains them (shutdown.ts). */
export type Workers = Pick<TaskTracker, 'stop' | 'running'>;

export async function startWorkers(deps: WorkerDeps): Promise<Workers> {
  const { boss, config } = deps;
  // NOTIFY wakes idle workers the moment a task is inserted. After a task, a worker
  // fetches again at once when the task took longer than the interval, else after it;
  // so the interval also bounds how long a short task's successor may wait.
  const polling = {
    pollingIntervalSeconds: config.workers.pollingIntervalSeconds,
    notifyPollingIntervalSeconds: config.workers.pollingIntervalSeconds,
  };
  const log = deps.log.child({ role: 'worker' });
  const tracker = new TaskTracker(boss, log);
  const onePerCall = <T>(queue: string, handler: (job: Job<T>) => Promise<void>) => {
    const tracked = tracker.track(queue, handler);
    return async (jobs: Job<T>[]) => {
      for (const job of jobs) await tracked(job);
    };
  };

  const pageHandler = onePerCall(
    QUEUES.page,
    createPageHandler({
      bus: deps.bus,
      blobs: deps.blobs,
      pipeline: deps.pagePipeline,
      retryLimit: config.workers.pageRetryLimit,
      log,
      outageWaitMs: config.workers.heartbeatSeconds * 1000,
      taskExpireSeconds: config.workers.taskExpireSeconds,
    }),
  );
  // One pg-boss worker per page slot, each woken to fetch again the moment it has finished a page.
  // pg-boss waits out the poll interval after a task shorter than it unless the count of waiting
  // tasks it caches (made by the supervisor every SUPERVISE_INTERVAL_SECONDS) says more wait: a job
  // that came to an idle service had each slot read a page every WORKER_POLL_SECONDS, its cores a
  // third idle (ADR 0044). A fetch that finds nothing falls back to the interval.
  for (let slot = 0; slot < config.workers.pageConcurrency; slot += 1) {
    let workerId: string | null = null;
    workerId = await boss.work<PageTaskData>(QUEUES.page, { ...polling, localConcurrency: 1, batchSize: 1 }, async (jobs) => {
      await pageHandler(jobs);
      if (workerId !== null) boss.notifyWorker(workerId);
    });
  }
  await boss.work<ExportTaskData>(
    QUEUES.export,
    { ...polling, localConcurrency: config.workers.exportConcurrency, batchSize: 1 },
    onePerCall(
      QUEUES.export,
      createExportHandler({
        bus: deps.bus,
        blobs: deps.blobs,
        pipeline: deps.exportPipeline,
        retryLimit: config.workers.pageRetryLimit,
        log,
        outageWaitMs: config.workers.heartbeatSeconds * 1000,
      }),
    ),
  );
  await boss.work<CallbackTaskData>(
    QUEUES.callback,
    { ...polling, localConcurrency: 4, batchSize: 1 },
    onePerCall(QUEUES.callback, createCallbackHandler({ bus: deps.bus, config, log })),
  );
  await boss.work(QUEUES.expireResults, { ...polling, batchSize: 1 }, async () => {
    await expireResults({ bus: deps.bus, blobs: deps.blobs, log });
  });
  tracker.addQueue(QUEUES.expireResults);
  await boss.schedule(QUEUES.expireResults, '* * * * *');
  // Folders of jobs and models that were never recorded (a process lost between storing files and recording them).
  await boss.work(QUEUES.sweepOrphanBlobs, { ...polling, batchSize: 1 }, async () => {
    await sweepOrphanBlobs({ db: deps.bus.db.pool, blobs: deps.blobs, log });
    await sweepOrphanModelFolders({ db: deps.bus.db.pool, blobs: deps.blobs, log });
    await sweepStalledWrites({ blobs: deps.blobs, log });
  });
  tracker.addQueue(QUEUES.sweepOrphanBlobs);
  await boss.schedule(QUEUES.sweepOrphanBlobs, '*/10 * * * *');
  for (const queue of await startLostTaskWorkers(boss, { bus: deps.bus, config, log }, polling)) tracker.addQueue(queue);
  return tracker;
}
