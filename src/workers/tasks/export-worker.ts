// Builds the result archive of a job whose pages are all complete, then records JobSucceeded.
import { Rejection } from '../../../domain/rejections.ts';
import type { Job } from '../../queue/boss.ts';
import { archiveKey as archiveKeyOf, claimName } from '../../blobs/blob-keys.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';
import { indexJobText } from '../../use-cases/search.ts';
import type { Logger } from '../../platform/logger.ts';
import type { ExportPipeline } from '../../pipeline/pipeline.ts';
import { watchForJobEnd } from '../mechanics/cancel-watch.ts';
import { exportsFailed } from '../../metrics/metrics.ts';
import { failJob } from './page-worker.ts';
import { isOutage } from '../../outage/outage.ts';
import { dropUnlessRecorded } from '../mechanics/claim-files.ts';
import { ridingOutOutages } from '../mechanics/riding-out-outages.ts';
import type { ExportTaskData } from '../../queue/queues.ts';
import { describeError, isJobEnded, isPermanent, wasHandedBack } from '../mechanics/task-errors.ts';

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
  return async (task: Job<ExportTaskData>): Promise<void> => {
    // This claim's own archive, the same through its runs again after an outage; another claim of
    // the task (a retry racing it) writes its own, and each deletes only its own.
    const archiveKey = archiveKeyOf(task.data.jobId, claimName(task));
    const run = task.data.correctionVersion === undefined ? runExport : runReexport;
    return ridingOutOutages<Job<ExportTaskData>>(deps, (attempt) => run(deps, attempt, archiveKey))(task);
  };
}

async function runExport(deps: ExportWorkerDeps, task: Job<ExportTaskData>, archiveKey: string): Promise<void> {
  const { jobId } = task.data;
  const log = deps.log.child({ job_id: jobId, task_id: task.id, attempt: task.retryCount + 1 });
  const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
  /** The archive key the job recorded, read afresh (after the job ended under this claim). */
  const recordedArchive = async () => (await deps.bus.loadJob(deps.bus.db.pool, jobId)).archiveKey;
  if (state.status !== 'processing' || !state.options) {
    // A run again after an outage may have stored its archive before: it goes unless recorded.
    await dropUnlessRecorded(deps.blobs, archiveKey, () => state.archiveKey);
    log.info({ state: state.status }, 'export task dropped');
    return;
  }
  const watch = watchForJobEnd(deps.bus.db.pool, jobId);
  const signal = AbortSignal.any([task.signal, watch.signal]);
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
    // The search index's lines, from the stored page results, before the job is done (ADR 0039).
    await indexJobText(
      { db: deps.bus.db, blobs: deps.blobs },
      {
        jobId,
        accountId: state.accountId,
        pages: state.pages.map((source) => ({ pageNumber: source.pageNumber, resultKey: state.completedPages[source.pageNumber] })),
      },
    );
    signal.throwIfAborted();
    const succeeded = await deps.bus.job(
      jobId,
      { type: 'SucceedJob', archiveKey: outcome.archiveKey, archiveBytes: outcome.bytes, archiveSha256: outcome.sha256, now: new Date() },
      { actor: 'worker', causationId: task.id },
    );
    if (succeeded.after.archiveKey !== archiveKey) {
      // Another claim of the export succeeded first: its archive is the job's.
      await dropUnlessRecorded(deps.blobs, archiveKey, () => succeeded.after.archiveKey);
      log.info('job already done by another claim of its export: this archive dropped');
      return;
    }
    log.info({ bytes: outcome.bytes }, 'job done');
  } catch (error) {
    if (wasHandedBack(task.signal)) {
      // The next claim names its own archive: one this claim stored and did not record is nobody's.
      await dropUnlessRecorded(deps.blobs, archiveKey, recordedArchive);
      log.info('export task handed back: the worker is stopping');
      return;
    }
    // An outage first: the job's end the watch saw may be this claim's own success, recorded
    // before the answer was lost; the run again reads the job and keeps a recorded archive.
    if (isOutage(error)) throw error;
    if (isJobEnded(error) || watch.signal.aborted) {
      await dropUnlessRecorded(deps.blobs, archiveKey, recordedArchive);
      log.info('export dropped: job has ended');
      return;
    }
    const lastTry = isPermanent(error) || task.retryCount >= deps.retryLimit;
    exportsFailed.inc({ outcome: lastTry ? 'job_failed' : 'retried' });
    log.warn({ err: error, last_try: lastTry }, 'export failed');
    if (!lastTry) throw error;
    await failJob(deps.bus, jobId, `export: ${describeError(error)}`, null, task.id);
  } finally {
    watch.stop();
  }
}

/**
 * A re-export after corrections (docs/corrections.md, ADR 0032): the done job's archive rebuilt
 * with the corrections up to the task's version, recorded as ResultReexported; the archive it
 * replaces is deleted once the new one is recorded. A task that is no longer the newest
 * correction's is dropped (the newest one exports), as is one for a job that expired. Its failure
 * never fails the job: the archive recorded before stays the download, and the next correction
 * schedules another try.
 */
async function runReexport(deps: ExportWorkerDeps, task: Job<ExportTaskData>, archiveKey: string): Promise<void> {
  const { jobId } = task.data;
  const version = task.data.correctionVersion ?? 0;
  const log = deps.log.child({ job_id: jobId, task_id: task.id, attempt: task.retryCount + 1, correction_version: version });
  const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
  const recordedArchive = async () => (await deps.bus.loadJob(deps.bus.db.pool, jobId)).archiveKey;
  const current =
    state.status === 'done' && !state.resultExpired && Date.now() < Date.parse(state.expiresAt ?? '') && state.options !== null;
  if (!current || version !== state.correctionVersion || version <= state.exportedCorrectionVersion) {
    await dropUnlessRecorded(deps.blobs, archiveKey, () => state.archiveKey);
    log.info({ state: state.status, newest: state.correctionVersion }, 're-export dropped: outdated or the job expired');
    return;
  }
  const previous = state.archiveKey;
  try {
    const outcome = await deps.pipeline.exportJob(
      {
        jobId,
        accountId: state.accountId,
        createdAt: state.createdAt ?? '',
        options: state.options!,
        pages: state.pages.map((source) => ({ source, resultKey: state.completedPages[source.pageNumber] })),
        archiveKey,
        corrections: { version, lines: state.correctedLines },
      },
      { blobs: deps.blobs, signal: task.signal, log },
    );
    const correctedLines = outcome.correctedLines ?? 0;
    const recorded = await deps.bus.job(
      jobId,
      {
        type: 'RecordReexport',
        correctionVersion: version,
        correctedLines,
        archiveKey: outcome.archiveKey,
        archiveBytes: outcome.bytes,
        archiveSha256: outcome.sha256,
        now: new Date(),
      },
      { actor: 'worker', causationId: task.id },
    );
    if (recorded.after.archiveKey !== archiveKey) {
      await dropUnlessRecorded(deps.blobs, archiveKey, () => recorded.after.archiveKey);
      log.info('re-export not recorded (a newer one was): this archive dropped');
      return;
    }
    // The archive it replaces is nobody's now.
    if (previous && previous !== archiveKey) await deps.blobs.deletePrefix(previous).catch(() => undefined);
    log.info({ bytes: outcome.bytes, corrected_lines: correctedLines }, 'result re-exported with corrections');
  } catch (error) {
    if (wasHandedBack(task.signal)) {
      await dropUnlessRecorded(deps.blobs, archiveKey, recordedArchive);
      log.info('re-export handed back: the worker is stopping');
      return;
    }
    if (isOutage(error)) throw error;
    await dropUnlessRecorded(deps.blobs, archiveKey, recordedArchive);
    if (isJobEnded(error) || (error instanceof Rejection && error.code === 'job_expired')) {
      log.info('re-export dropped: the job can no longer be exported');
      return;
    }
    const lastTry = isPermanent(error) || task.retryCount >= deps.retryLimit;
    exportsFailed.inc({ outcome: lastTry ? 'reexport_abandoned' : 'retried' });
    log.warn({ err: error, last_try: lastTry }, 're-export failed; the archive recorded before stays the download');
    if (!lastTry) throw error;
  }
}
