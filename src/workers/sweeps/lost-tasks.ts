// Tasks that end without their handler recording an outcome: a worker killed (OOM, SIGKILL, a
// crash) on a task's last attempt, a heartbeat that lapsed, a task past TASK_EXPIRE_SECONDS.
// pg-boss fails such a task and, in the same statement, copies it into its queue's dead-letter
// queue; the handlers here record what the page handler would have: JobFailed naming the page
// and why, whose reaction sends the job.failed callback. The sweep is the backstop: a job still
// queued or processing with a page (or its export) that has no live task is failed. Both are
// idempotent: FailJob on a failed job records nothing, and a page completed meanwhile is left be.
import { readJobPages, readJobState, readRunningJobs } from '../../../projections/job-status.ts';
import { redactUrl } from '../../shared/redact-url.ts';
import type { JobWithMetadata, PgBoss } from '../../queue/boss.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { isTerminalCallbackState } from '../tasks/callback-body.ts';
import { recordCallbackAttempt } from '../tasks/callback-worker.ts';
import { failJob } from '../tasks/page-worker.ts';
import { failTraining } from '../tasks/training-worker.ts';
import {
  exportTaskId,
  type ModelTrainingTaskData,
  pageTaskId,
  QUEUES,
  type CallbackTaskData,
  type ExportTaskData,
  type PageTaskData,
} from '../../queue/queues.ts';
import { readPageAndExportTasks, type TaskRow } from '../../queue/page-and-export-tasks.ts';

export interface LostTaskDeps {
  bus: CommandBus;
  config: Config;
  log: Logger;
}

/** Why a task ended without an outcome, from the output pg-boss recorded when it failed it. */
export function lostReason(attempts: number, output: unknown): string {
  const message = outputMessage(output);
  const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
  switch (message) {
    case 'job heartbeat timeout':
      return `worker lost after ${tries} (its heartbeat lapsed)`;
    case 'job timed out':
      return `worker lost after ${tries} (the task ran past its expiry)`;
    case 'pg-boss shut down while active':
      return `worker lost after ${tries} (stopped mid-task)`;
    case null:
      return `worker lost after ${tries}`;
    default:
      return `failed after ${tries}: ${message}`;
  }
}

function outputMessage(output: unknown): string | null {
  const value = (output as { value?: { message?: unknown }; message?: unknown } | null) ?? null;
  const message = value?.value?.message ?? value?.message;
  return typeof message === 'string' && message.length > 0 ? message : null;
}

const attemptsOf = (task: JobWithMetadata<unknown>): number => (task.sourceRetryCount ?? 0) + 1;

export function createLostPageHandler(deps: LostTaskDeps) {
  return async (task: JobWithMetadata<PageTaskData>): Promise<void> => {
    const { jobId, page } = task.data;
    const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
    if (state.status !== 'queued' && state.status !== 'processing') return;
    if (state.completedPages[page] !== undefined) return;
    const name = state.pages.find((candidate) => candidate.pageNumber === page)?.name ?? '?';
    const reason = lostReason(attemptsOf(task), task.sourceOutput);
    deps.log.warn({ job_id: jobId, page, reason }, 'page task lost: failing the job');
    await failJob(deps.bus, jobId, `page ${page} (${name}): ${reason}`, page, task.id);
  };
}

export function createLostExportHandler(deps: LostTaskDeps) {
  return async (task: JobWithMetadata<ExportTaskData>): Promise<void> => {
    const { jobId } = task.data;
    const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
    if (state.status !== 'processing') return;
    const reason = lostReason(attemptsOf(task), task.sourceOutput);
    deps.log.warn({ job_id: jobId, reason }, 'export task lost: failing the job');
    await failJob(deps.bus, jobId, `export: ${reason}`, null, task.id);
  };
}

/** A training task that ran out of attempts without recording an end (its trainer killed each time) fails its model. */
export function createLostTrainingHandler(deps: LostTaskDeps) {
  return async (task: JobWithMetadata<ModelTrainingTaskData>): Promise<void> => {
    const { modelId } = task.data;
    const state = await deps.bus.loadModel(deps.bus.db.pool, modelId);
    if (state.status !== 'queued' && state.status !== 'training') return;
    const reason = lostReason(attemptsOf(task), task.sourceOutput).replace(/^worker/, 'trainer');
    deps.log.warn({ model_id: modelId, reason }, 'training task lost: failing the training');
    await failTraining(deps.bus, modelId, reason, task.id);
  };
}

/**
 * A callback task that ran out of its pg-boss tries records its attempt as failed: the delivery
 * goes on with its schedule (the next attempt is a new task), and the last one ends it
 * `abandoned` with CallbackAbandoned, as any failed delivery does.
 */
export function createLostCallbackHandler(deps: LostTaskDeps) {
  return async (task: JobWithMetadata<CallbackTaskData>): Promise<void> => {
    const { jobId, attempt } = task.data;
    const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
    const delivery = state.callback;
    if (!delivery || isTerminalCallbackState(delivery.state) || attempt !== delivery.attempts + 1 || !state.options?.webhookUrl) return;
    const reason = lostReason(attemptsOf(task), task.sourceOutput);
    deps.log.warn(
      { job_id: jobId, attempt, reason, webhook_url: redactUrl(state.options.webhookUrl) },
      'callback task lost: recording the attempt as failed',
    );
    await recordCallbackAttempt(deps, jobId, attempt, state.options.webhookUrl, {
      ok: false,
      httpStatus: null,
      error: `callback task ${reason}`,
      durationMs: 0,
      causationId: task.id,
    });
  };
}

const LIVE = new Set(['created', 'retry', 'active']);

/**
 * Fails every job that is queued or processing while one of its unfinished pages (or, once all
 * pages are done, its export) has no live task, neither in its queue nor in the dead-letter
 * queue. Returns the jobs it failed. Safe to run anywhere, any number of times at once.
 *
 * Why it cannot fail a healthy job: every change keeps "an unfinished page has a live task" true
 * at commit (a task is inserted with the event that needs it; a page's completion commits before
 * its task completes; pg-boss fails a task and inserts its dead-letter copy in one statement).
 * The tasks are read before the page states, so a page still unfinished in the later read was
 * unfinished, hence had a live task, when the tasks were read. The export is checked only when
 * every page was done before the tasks were read (its task commits with the last page).
 */
export async function sweepStrandedJobs(deps: { bus: CommandBus; log: Logger; schema?: string }, limit = 500): Promise<string[]> {
  const pool = deps.bus.db.pool;
  const schema = deps.schema ?? 'pgboss';
  const candidates = await readRunningJobs(pool, limit);
  const failed: string[] = [];
  for (const candidate of candidates) {
    const jobId = candidate.job_id;
    const allPagesDoneBefore = candidate.pages_done === candidate.page_count;
    const pageIds = new Map<string, number>();
    for (let page = 1; page <= candidate.page_count; page++) pageIds.set(pageTaskId(jobId, page), page);
    const exportId = exportTaskId(jobId);
    const ids = [...pageIds.keys(), exportId];
    const tasks = await readPageAndExportTasks(pool, ids, schema);
    const byId = new Map<string, TaskRow[]>();
    for (const row of tasks) {
      const key = row.source_id ?? row.id;
      byId.set(key, [...(byId.get(key) ?? []), row]);
    }
    const live = (id: string) => (byId.get(id) ?? []).some((row) => LIVE.has(row.state));
    const why = (id: string) => {
      const own = (byId.get(id) ?? []).find((row) => row.id === id);
      return own ? lostReason(own.retry_count + 1, own.output) : 'its task is gone';
    };

    const status = await readJobState(pool, jobId);
    if (status !== 'queued' && status !== 'processing') continue;
    const unfinished = (await readJobPages(pool, jobId)).filter((row) => !row.completed);
    let message: string | null = null;
    let page: number | null = null;
    for (const row of unfinished) {
      const id = pageTaskId(jobId, row.page_number);
      if (live(id)) continue;
      message = `page ${row.page_number} (${row.name}): ${why(id)}`;
      page = row.page_number;
      break;
    }
    if (message === null && allPagesDoneBefore && unfinished.length === 0 && !live(exportId)) {
      message = `export: ${why(exportId)}`;
    }
    if (message === null) continue;
    deps.log.warn({ job_id: jobId, page, reason: message }, 'stranded job: no live task; failing it');
    await failJob(deps.bus, jobId, message, page, `sweep:${jobId}`);
    failed.push(jobId);
  }
  return failed;
}

/** Registers the dead-letter workers and the sweep (a cron task, every minute). */
export async function startLostTaskWorkers(
  boss: PgBoss,
  deps: LostTaskDeps,
  polling: { pollingIntervalSeconds: number },
): Promise<string[]> {
  const log = deps.log.child({ component: 'lost-tasks' });
  const each =
    <T>(handler: (task: JobWithMetadata<T>) => Promise<void>) =>
    async (tasks: JobWithMetadata<T>[]) => {
      for (const task of tasks) await handler(task);
    };
  await boss.work(QUEUES.pageLost, { ...polling, batchSize: 1, includeMetadata: true }, each(createLostPageHandler({ ...deps, log })));
  await boss.work(QUEUES.exportLost, { ...polling, batchSize: 1, includeMetadata: true }, each(createLostExportHandler({ ...deps, log })));
  await boss.work(
    QUEUES.callbackLost,
    { ...polling, batchSize: 1, includeMetadata: true },
    each(createLostCallbackHandler({ ...deps, log })),
  );
  await boss.work(
    QUEUES.modelTrainingLost,
    { ...polling, batchSize: 1, includeMetadata: true },
    each(createLostTrainingHandler({ ...deps, log })),
  );
  await boss.work(QUEUES.sweepStranded, { ...polling, batchSize: 1 }, async () => {
    await sweepStrandedJobs({ bus: deps.bus, log });
  });
  await boss.schedule(QUEUES.sweepStranded, '* * * * *');
  return [QUEUES.pageLost, QUEUES.exportLost, QUEUES.callbackLost, QUEUES.modelTrainingLost, QUEUES.sweepStranded];
}
