// Builds the result archive of a job whose pages are all complete, then records JobSucceeded.
import type { Job } from 'pg-boss';
import { archiveKey as archiveKeyOf, attemptName } from '../blobs/blob-keys.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { CommandBus } from '../use-cases/command-bus.ts';
import type { Logger } from '../logger.ts';
import type { ExportPipeline } from '../pipeline/pipeline.ts';
import { watchForJobEnd } from './cancel-watch.ts';
import { exportsFailed } from '../metrics/metrics.ts';
import { failJob } from './page-worker.ts';
import { isOutage, ridingOutOutages } from './riding-out-outages.ts';
import type { ExportTaskData } from './queues.ts';
import { describeError, isJobEnded, isPermanent, wasHandedBack } from './task-errors.ts';

export interface ExportWorkerDeps {
  bus: CommandBus;
  blobs: BlobStore;
  pipeline: ExportPipeline;
  retryLimit: number;
  log: Logger;
  /** How long a task waits for the database or the blob store to come back (default 30 s). */
  outageWaitMs?: number;
}

export function createExportHandler(deps: ExportWorkerDeps) {
  return ridingOutOutages<Job<ExportTaskData>>(deps, async (task) => {
    const { jobId } = task.data;
    const log = deps.log.child({ job_id: jobId, task_id: task.id, attempt: task.retryCount + 1 });
    const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
    if (state.status !== 'processing' || !state.options) {
      log.info({ state: state.status }, 'export task dropped');
      return;
    }
    const watch = watchForJobEnd(deps.bus.db.pool, jobId);
    const signal = AbortSignal.any([task.signal, watch.signal]);
    // This attempt's own archive: on its way out it deletes only that, never another attempt's.
    const archiveKey = archiveKeyOf(jobId, attemptName(task));
    try {
      await deps.bus.job(
        jobId,
        { type: 'StartStep', page: null, step: 'export', now: new Date() },
        { actor: 'worker', causationId: task.id },
      );
      const outcome = await deps.pipeline.exportJob(
        {
          jobId,
          accountId: state.accountId,
          createdAt: state.createdAt ?? '',
          options: state.options,
          pages: state.pages.map((source) => ({ source, resultKey: state.completedPages[source.pageNumber] })),
          archiveKey,
        },
        { blobs: deps.blobs, signal, log },
      );
      signal.throwIfAborted();
      await deps.bus.job(
        jobId,
        { type: 'SucceedJob', archiveKey: outcome.archiveKey, archiveBytes: outcome.bytes, archiveSha256: outcome.sha256, now: new Date() },
        { actor: 'worker', causationId: task.id },
      );
      log.info({ bytes: outcome.bytes }, 'job done');
    } catch (error) {
      if (wasHandedBack(task.signal)) {
        log.info('export task handed back: the worker is stopping');
        return;
      }
      if (isJobEnded(error) || watch.signal.aborted) {
        await deps.blobs.deletePrefix(archiveKey).catch(() => {});
        log.info('export dropped: job has ended');
        return;
      }
      if (isOutage(error)) throw error;
      const lastTry = isPermanent(error) || task.retryCount >= deps.retryLimit;
      exportsFailed.inc({ outcome: lastTry ? 'job_failed' : 'retried' });
      log.warn({ err: error, last_try: lastTry }, 'export failed');
      if (!lastTry) throw error;
      await failJob(deps.bus, jobId, `export: ${describeError(error)}`, null, task.id);
    } finally {
      watch.stop();
    }
  });
}
