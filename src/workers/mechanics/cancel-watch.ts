// Aborts a task's work soon after its job leaves the running states (a DELETE from
// any API process), so a cancelled job stops within one page's work.
import { readJobState } from '../../../projections/job-status.ts';
import type { Queryable } from '../../db/database.ts';

export function watchForJobEnd(db: Queryable, jobId: string, intervalMs = 500): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  const timer = setInterval(async () => {
    try {
      const state = await readJobState(db, jobId);
      if (state !== 'queued' && state !== 'processing') controller.abort(new Error(`job ${jobId} is ${state ?? 'gone'}`));
    } catch {
      // A failed check (database restarting) says nothing about the job; the next one will.
    }
  }, intervalMs);
  timer.unref();
  return {
    signal: controller.signal,
    stop: () => clearInterval(timer),
  };
}
