// A task attempt during which the database or the blob store went away (a restart, a failover,
// a network cut) is not a failure of the task: the handler waits for what went away (at most
// `outageWaitMs`, default the task's heartbeat, beyond which pg-boss would retry the task anyway)
// and runs the task again, in the same attempt; every command a task sends and every blob it
// writes is idempotent. Only when it stays away is the attempt spent (docs/reliability.md).
import type { BlobStore } from '../../blobs/blob-store.ts';
import { waitForStorage } from '../../blobs/storage-unavailable.ts';
import { waitForDatabase } from '../../db/database.ts';
import type { Logger } from '../../platform/logger.ts';
import { OUTAGE_NAMES, outageOf } from '../../outage/outage.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';

/** Times one attempt runs a task again after the database or the blob store went away under it. */
export const OUTAGE_ROUNDS = 3;

export interface OutageDeps {
  bus: CommandBus;
  blobs: BlobStore;
  log: Logger;
  /** How long a task waits for the database or the blob store to come back (default 30 s). */
  outageWaitMs?: number;
}

export function ridingOutOutages<T extends { signal: AbortSignal }>(
  deps: OutageDeps,
  attempt: (task: T) => Promise<void>,
): (task: T) => Promise<void> {
  return async (task) => {
    for (let round = 1; ; round++) {
      try {
        return await attempt(task);
      } catch (error) {
        const away = outageOf(error);
        if (away === null || round > OUTAGE_ROUNDS || task.signal.aborted) throw error;
        const waitMs = deps.outageWaitMs ?? 30_000;
        deps.log.warn(
          { err: error, round, task_id: (task as { id?: string }).id },
          `${OUTAGE_NAMES[away]} unavailable mid-task: waiting for it, then running the task again in the same attempt`,
        );
        // A store that throttles writes (SlowDown) may answer its read check at once: back off
        // before running the whole task again (0.25, 0.5, 1 s), as the store asked.
        if (away === 'storage') await backOff(250 * 2 ** (round - 1), task.signal);
        const back =
          away === 'storage'
            ? await waitForStorage(deps.blobs, waitMs, task.signal)
            : await waitForDatabase(deps.bus.db.pool, waitMs, task.signal);
        if (!back) throw error;
      }
    }
  };
}

function backOff(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
