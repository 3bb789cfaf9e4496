// Cron task: at expires_at, delete a finished job's stored files (upload, page
// images, page results, archive, and the lines the search index holds of them) and record ResultExpired.
import { readExpiredResultsDue } from '../../../projections/job-status.ts';
import { deleteSearchLines } from '../../../projections/search.ts';
import { jobPrefix } from '../../blobs/blob-keys.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';
import type { Logger } from '../../platform/logger.ts';
import { isJobEnded } from '../mechanics/task-errors.ts';

export interface ExpireResultsDeps {
  bus: CommandBus;
  blobs: BlobStore;
  log: Logger;
}

export async function expireResults(deps: ExpireResultsDeps, now = new Date()): Promise<number> {
  const due = await readExpiredResultsDue(deps.bus.db.pool, now, 1000);
  let expired = 0;
  for (const jobId of due) {
    // Files first: a crash in between leaves the event to the next run, never files without an owner.
    await deps.blobs.deletePrefix(jobPrefix(jobId));
    await deleteSearchLines(deps.bus.db.pool, jobId);
    try {
      const result = await deps.bus.job(jobId, { type: 'ExpireResult', now }, { actor: 'system' });
      if (result.events.length > 0) expired++;
    } catch (error) {
      if (!isJobEnded(error)) throw error;
    }
  }
  if (expired > 0) deps.log.info({ expired }, 'results expired');
  return expired;
}
