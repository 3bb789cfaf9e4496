// Runs one page of a job through the page pipeline, stores its result and records
// PageCompleted. The append that completes the last page schedules the export.
import type { Job } from '../../queue/boss.ts';
import { claimName, pageResultKey } from '../../blobs/blob-keys.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';
import type { Logger } from '../../platform/logger.ts';
import type { PagePipeline } from '../../pipeline/pipeline.ts';
import { watchForJobEnd } from '../mechanics/cancel-watch.ts';
import { isOutage } from '../../outage/outage.ts';
import { dropUnlessRecorded } from '../mechanics/claim-files.ts';
import { ridingOutOutages } from '../mechanics/riding-out-outages.ts';
import type { PageTaskData } from '../../queue/queues.ts';
import { describeError, isJobEnded, isPermanent, wasHandedBack } from '../mechanics/task-errors.ts';

export interface PageWorkerDeps {
  bus: CommandBus;
  blobs: BlobStore;
  pipeline: PagePipeline;
  retryLimit: number;
  log: Logger;
  /** How long a task waits for the database or the blob store to come back (default 30 s). */
  outageWaitMs?: number;
  /** When pg-boss expires a running page task (TASK_EXPIRE_SECONDS): the page's deadline is set from it. */
  taskExpireSeconds?: number;
}

/**
 * A page's deadline: its task's expiry from the moment the handler took it, less the time that
 * storing the result and recording the completion may take (30 s, a tenth of a short expiry).
 */
function pageDeadline(taskExpireSeconds: number | undefined, startedAt: number): number | undefined {
  if (taskExpireSeconds === undefined) return undefined;
  const expireMs = taskExpireSeconds * 1000;
  return startedAt + expireMs - Math.min(30_000, expireMs / 10);
}

export function createPageHandler(deps: PageWorkerDeps) {
  return async (task: Job<PageTaskData>): Promise<void> => {
    // Taken once per claim: a run again after an outage keeps the claim's deadline, and writes
    // its result to the same key; another claim of the page (a retry racing it) writes its own.
    const deadline = pageDeadline(deps.taskExpireSeconds, Date.now());
    const resultKey = pageResultKey(task.data.jobId, task.data.page, claimName(task));
    return ridingOutOutages<Job<PageTaskData>>(deps, (attempt) => runPage(deps, attempt, deadline, resultKey))(task);
  };
}

/** The result key the job recorded for `page`, or null. */
async function recordedResult(deps: PageWorkerDeps, jobId: string, page: number): Promise<string | null> {
  return (await deps.bus.loadPageView(deps.bus.db.pool, jobId, page))?.state.completedPages[page] ?? null;
}

async function runPage(deps: PageWorkerDeps, task: Job<PageTaskData>, deadline: number | undefined, resultKey: string): Promise<void> {
  const { jobId, page } = task.data;
  const log = deps.log.child({ job_id: jobId, page, task_id: task.id, attempt: task.retryCount + 1 });
  // The page's view travels from command to command: each one decides from it without a read,
  // and a scope conflict (cancel, a racing attempt) makes the bus read it afresh.
  let view = await deps.bus.loadPageView(deps.bus.db.pool, jobId, page);
  const state = view?.state;
  // A run again after an outage may have stored its result before: it goes unless it was recorded.
  if (state?.status !== 'queued' && state?.status !== 'processing') {
    await dropUnlessRecorded(deps.blobs, resultKey, () => state?.completedPages[page] ?? null);
    log.info({ state: state?.status ?? null }, 'page task dropped: job has ended');
    return;
  }
  if (state.completedPages[page] !== undefined) {
    await dropUnlessRecorded(deps.blobs, resultKey, () => state.completedPages[page]);
    return;
  }
  const source = state.pages.find((candidate) => candidate.pageNumber === page);
  if (!source || !state.options) throw new Error(`job ${jobId} has no page ${page}`);

  const watch = watchForJobEnd(deps.bus.db.pool, jobId);
  const signal = AbortSignal.any([task.signal, watch.signal]);
  // Tokens this attempt spent on correction, once the pipeline returned: if the attempt fails
  // after that (storing the result, recording the completion), they are logged, not recorded
  // as usage (docs/billing.md, "Tokens of failed attempts").
  let spent: { input_tokens: number; output_tokens: number; provider: string; model: string } | null = null;
  try {
    const result = await deps.pipeline.processPage(
      { jobId, accountId: state.accountId, pageCount: state.pageCount, page: source, options: state.options },
      {
        blobs: deps.blobs,
        signal,
        log,
        ...(deadline === undefined ? {} : { deadline }),
        enterStep: async (step) => {
          signal.throwIfAborted();
          ({ view } = await deps.bus.page(
            jobId,
            { type: 'StartStep', page, step, now: new Date() },
            { actor: 'worker', causationId: task.id },
            view ?? undefined,
          ));
        },
      },
    );
    if (result.correction) {
      const { inputTokens, outputTokens, provider, model } = result.correction;
      spent = { input_tokens: inputTokens, output_tokens: outputTokens, provider, model };
    }
    signal.throwIfAborted();
    await deps.blobs.put(resultKey, JSON.stringify(result));
    const correction = result.correction;
    const completed = await deps.bus.page(
      jobId,
      {
        type: 'CompletePage',
        page,
        resultKey,
        lineCount: result.regions.reduce((sum, region) => sum + region.lines.length, 0),
        warnings: result.warnings,
        correction: correction
          ? {
              provider: correction.provider,
              model: correction.model,
              inputTokens: correction.inputTokens,
              outputTokens: correction.outputTokens,
              refusedLines: correction.refusedLines.length,
              refused: correction.refusedLines.map(({ id, reason }) => ({ id, reason })),
              ...(correction.outcome ? { outcome: correction.outcome } : {}),
            }
          : null,
        now: new Date(),
      },
      { actor: 'worker', causationId: task.id },
      view ?? undefined,
    );
    if (completed.view?.state.completedPages[page] !== resultKey) {
      // Another attempt completed the page first: its result is the one recorded; this one is nobody's.
      await dropUnlessRecorded(deps.blobs, resultKey, () => completed.view?.state.completedPages[page] ?? null);
      log.info('page already completed by another attempt: this result dropped');
      return;
    }
    log.info('page completed');
  } catch (error) {
    if (spent && spent.input_tokens + spent.output_tokens > 0)
      log.warn({ correction: spent }, 'correction tokens spent by an attempt that did not complete (not in usage)');
    if (wasHandedBack(task.signal)) {
      // The next claim names its own result: one this claim stored and did not record is nobody's.
      await dropUnlessRecorded(deps.blobs, resultKey, () => recordedResult(deps, jobId, page));
      log.info('page task handed back: the worker is stopping');
      return;
    }
    if (isJobEnded(error) || watch.signal.aborted) {
      await dropUnlessRecorded(deps.blobs, resultKey, () => recordedResult(deps, jobId, page));
      log.info('page task dropped: job has ended');
      return;
    }
    // The database or the blob store away is not the page's failure: ridingOutOutages runs it again.
    if (isOutage(error)) throw error;
    const lastTry = isPermanent(error) || task.retryCount >= deps.retryLimit;
    log.warn({ err: error, last_try: lastTry }, 'page failed');
    if (!lastTry) throw error;
    // The page's own errors often start with its name already ("scan.jpg: cannot decode …").
    const reason = describeError(error);
    const own = `${source.name}: `;
    await failJob(
      deps.bus,
      jobId,
      `page ${page} (${source.name}): ${reason.startsWith(own) ? reason.slice(own.length) : reason}`,
      page,
      task.id,
    );
  } finally {
    watch.stop();
  }
}

export async function failJob(
  bus: CommandBus,
  jobId: string,
  errorMessage: string,
  page: number | null,
  causationId: string,
): Promise<void> {
  try {
    await bus.job(jobId, { type: 'FailJob', errorMessage, page, now: new Date() }, { actor: 'worker', causationId });
  } catch (error) {
    if (!isJobEnded(error)) throw error;
  }
}
