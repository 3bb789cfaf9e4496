// Aborts a task's work soon after its job leaves the running states (a DELETE from
// any API process), so a cancelled job stops within one page's work; and a training's soon after
// its model is cancelled, so a cancelled training stops within seconds.
import { readJobState } from '../../../projections/job-status.ts';
import { readModelState } from '../../../projections/models.ts';
import type { Queryable } from '../../db/database.ts';

export interface EndWatch {
  signal: AbortSignal;
  stop(): void;
}

export function watchForJobEnd(db: Queryable, jobId: string, intervalMs = 500): EndWatch {
  return watchState(() => readJobState(db, jobId), ['queued', 'processing'], `job ${jobId}`, intervalMs);
}

export function watchForModelEnd(db: Queryable, modelId: string, intervalMs = 2000): EndWatch {
  return watchState(() => readModelState(db, modelId), ['queued', 'training'], `model ${modelId}`, intervalMs);
}

function watchState(read: () => Promise<string | undefined>, running: readonly string[], what: string, intervalMs: number): EndWatch {
  const controller = new AbortController();
  const timer = setInterval(async () => {
    try {
      const state = await read();
      if (state === undefined || !running.includes(state)) controller.abort(new Error(`${what} is ${state ?? 'gone'}`));
    } catch {
      // A failed check (database restarting) says nothing about the job or model; the next one will.
    }
  }, intervalMs);
  timer.unref();
  return {
    signal: controller.signal,
    stop: () => clearInterval(timer),
  };
}
