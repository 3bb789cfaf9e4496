// Cron task: folders `jobs/<id>` of the blob store that belong to no job. Intake stores a job's
// pages (and its upload) before it records the job; a process that dies in between (a crash, a
// SIGKILL, the database away when `JobQueued` is appended) leaves the folder behind with no
// job to expire it. The sweep deletes such folders once nothing in them changed for an hour
// (an intake in progress writes into its folder, and takes seconds to minutes), and only when
// neither the job's stream nor its status row exists. Idempotent; safe in several processes at once.
// The same task removes partial files of writes that stopped (a process killed mid-write) inside
// recorded jobs' folders, which would otherwise stay until the job's results expire.
import { jobStreamId, modelStreamId } from '../../../domain/events.ts';
import { readKnownJobIds } from '../../../projections/job-status.ts';
import { readKnownModelIds } from '../../../projections/models.ts';
import { JOBS_ROOT, jobPrefix, MODELS_ROOT, modelPrefix } from '../../blobs/blob-keys.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { Queryable } from '../../db/database.ts';
import type { Logger } from '../../platform/logger.ts';
import { existingStreams } from '../../store/existing-streams.ts';

export const ORPHAN_MIN_AGE_MS = 3600_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface OrphanSweepDeps {
  db: Queryable;
  blobs: BlobStore;
  log: Logger;
}

/** Deletes orphan job folders; returns the job ids whose folders it deleted. */
export async function sweepOrphanBlobs(deps: OrphanSweepDeps, now = new Date(), minAgeMs = ORPHAN_MIN_AGE_MS): Promise<string[]> {
  const names = (await deps.blobs.list(JOBS_ROOT)).filter((name) => UUID.test(name));
  const deleted: string[] = [];
  for (let start = 0; start < names.length; start += 1000) {
    const batch = names.slice(start, start + 1000);
    // The job exists once JobQueued is in the log (its status row is written in the same transaction;
    // both are read, so a projection rebuild in progress cannot make a job look absent). Neither
    // row is ever deleted, so the two reads need no common snapshot: a job either finds was there.
    const withStatus = await readKnownJobIds(deps.db, batch);
    const withStream = await existingStreams(deps.db, batch.map(jobStreamId));
    for (const jobId of batch) {
      if (withStatus.has(jobId) || withStream.has(jobStreamId(jobId))) continue;
      const prefix = jobPrefix(jobId);
      const modified = await deps.blobs.lastModified(prefix);
      if (modified === null || now.getTime() - modified.getTime() < minAgeMs) continue;
      await deps.blobs.deletePrefix(prefix);
      deleted.push(jobId);
      deps.log.warn({ job_id: jobId, last_modified: modified.toISOString() }, 'orphan job folder deleted: no job was recorded for it');
    }
  }
  return deleted;
}

/**
 * Deletes folders `models/<id>` of models never recorded (a ground-truth intake whose process was
 * lost before ModelTrainingQueued was appended), by the same rules as job folders; returns the
 * model ids whose folders it deleted. A refused upload deletes its own folder at once.
 */
export async function sweepOrphanModelFolders(deps: OrphanSweepDeps, now = new Date(), minAgeMs = ORPHAN_MIN_AGE_MS): Promise<string[]> {
  const names = (await deps.blobs.list(MODELS_ROOT)).filter((name) => UUID.test(name));
  const deleted: string[] = [];
  for (let start = 0; start < names.length; start += 1000) {
    const batch = names.slice(start, start + 1000);
    const withRow = await readKnownModelIds(deps.db, batch);
    const withStream = await existingStreams(deps.db, batch.map(modelStreamId));
    for (const modelId of batch) {
      if (withRow.has(modelId) || withStream.has(modelStreamId(modelId))) continue;
      const prefix = modelPrefix(modelId);
      const modified = await deps.blobs.lastModified(prefix);
      if (modified === null || now.getTime() - modified.getTime() < minAgeMs) continue;
      await deps.blobs.deletePrefix(prefix);
      deleted.push(modelId);
      deps.log.warn(
        { model_id: modelId, last_modified: modified.toISOString() },
        'orphan model folder deleted: no model was recorded for it',
      );
    }
  }
  return deleted;
}

/** Removes partial files of stalled writes under `jobs/` and `models/` untouched for `minAgeMs`; returns their keys. */
export async function sweepStalledWrites(
  deps: Omit<OrphanSweepDeps, 'db'>,
  now = new Date(),
  minAgeMs = ORPHAN_MIN_AGE_MS,
): Promise<string[]> {
  const before = new Date(now.getTime() - minAgeMs);
  const removed: string[] = [];
  for (const root of [JOBS_ROOT, MODELS_ROOT]) removed.push(...((await deps.blobs.removeStalledWrites?.(root, before)) ?? []));
  for (const key of removed) deps.log.warn({ key }, 'partial file of a stalled write removed');
  return removed;
}
