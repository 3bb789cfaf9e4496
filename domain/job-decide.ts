// Job commands and `decide`: the rules of a job's life. Pure: the caller passes
// the time and every id, and appends the returned events.
import {
  PIPELINE_STEPS,
  type CorrectionActor,
  type CorrectionUsage,
  type JobEvent,
  type JobOptions,
  type PageSource,
  type PipelineStep,
} from './events.ts';
import { isTerminal, pagesDone, type JobState } from './job.ts';
import { reject } from './rejections.ts';

/** Delays before callback retries 1..5, in seconds (attempt 1 is immediate). */
export const CALLBACK_RETRY_DELAYS_SECONDS = [1, 5, 25, 125, 625] as const;
export const CALLBACK_MAX_ATTEMPTS = CALLBACK_RETRY_DELAYS_SECONDS.length + 1;

export type JobCommand =
  | {
      type: 'SubmitJob';
      jobId: string;
      accountId: string;
      keyId: string | null;
      pages: PageSource[];
      options: JobOptions;
      uploadKey: string;
      now: Date;
      retentionSeconds: number;
      idempotency: { key: string; requestHash: string } | null;
    }
  | { type: 'StartJob'; now: Date }
  | { type: 'StartStep'; page: number | null; step: PipelineStep; now: Date }
  | {
      type: 'CompletePage';
      page: number;
      resultKey: string;
      lineCount: number;
      warnings: string[];
      correction: CorrectionUsage | null;
      now: Date;
    }
  | { type: 'SucceedJob'; archiveKey: string; archiveBytes: number; archiveSha256: string; now: Date }
  | { type: 'FailJob'; errorMessage: string; page: number | null; now: Date }
  | { type: 'CancelJob'; now: Date }
  | {
      type: 'RecordCallbackAttempt';
      attempt: number;
      url: string;
      ok: boolean;
      httpStatus: number | null;
      error: string | null;
      durationMs: number;
      now: Date;
      /** Multiplies CALLBACK_RETRY_DELAYS_SECONDS (CALLBACK_RETRY_SCALE). */
      retryScale: number;
    }
  | { type: 'ExpireResult'; now: Date }
  | {
      /** A person's corrections of a done job's page (docs/corrections.md). */
      type: 'CorrectPageText';
      page: number;
      /** The lines to change, each once, with their new text (checked by the caller: length, characters). */
      lines: Array<{ id: string; text: string }>;
      /** The page's lines as the machine read them, by id (from its stored result): a line's text before its first correction. */
      machineText: Record<string, string>;
      actor: CorrectionActor;
      now: Date;
    }
  | {
      /** The archive rebuilt with the corrections up to `correctionVersion`. */
      type: 'RecordReexport';
      correctionVersion: number;
      correctedLines: number;
      archiveKey: string;
      archiveBytes: number;
      archiveSha256: string;
      now: Date;
    };

export function decideJob(state: JobState, command: JobCommand): JobEvent[] {
  if (command.type === 'SubmitJob') return submit(state, command);
  if (state.status === null) reject('job_not_found');

  switch (command.type) {
    case 'StartJob':
      if (state.status === 'processing') return [];
      assertActive(state);
      return [started(command.now)];

    case 'StartStep':
      return startStep(state, command);

    case 'CompletePage': {
      assertActive(state);
      assertPage(state, command.page);
      if (state.status === 'queued') reject('job_not_started');
      if (state.completedPages[command.page] !== undefined) return [];
      return [
        {
          type: 'PageCompleted',
          data: {
            page: command.page,
            resultKey: command.resultKey,
            lineCount: command.lineCount,
            warnings: command.warnings,
            correction: command.correction,
          },
        },
      ];
    }

    case 'SucceedJob':
      if (state.status === 'done') return [];
      assertActive(state);
      if (state.status === 'queued') reject('job_not_started');
      if (pagesDone(state) < state.pageCount) reject('pages_incomplete');
      return [
        {
          type: 'JobSucceeded',
          data: {
            finishedAt: command.now.toISOString(),
            archiveKey: command.archiveKey,
            archiveBytes: command.archiveBytes,
            archiveSha256: command.archiveSha256,
            warningMessage: summariseWarnings(state),
          },
        },
      ];

    case 'FailJob':
      if (state.status === 'failed') return [];
      assertActive(state);
      return [
        { type: 'JobFailed', data: { finishedAt: command.now.toISOString(), errorMessage: command.errorMessage, page: command.page } },
      ];

    case 'CancelJob':
      if (state.status === 'cancelled') return [];
      if (state.status === 'done' || state.status === 'failed') reject('job_already_finished');
      return [{ type: 'JobCancelled', data: { cancelledAt: command.now.toISOString(), previousState: state.status } }];

    case 'RecordCallbackAttempt':
      return recordCallbackAttempt(state, command);

    case 'ExpireResult':
      if (state.resultExpired) return [];
      if (!isTerminal(state)) reject('job_not_done', 'Only a finished job has a result to expire.');
      if (command.now.getTime() < Date.parse(state.expiresAt ?? '')) reject('result_not_expired');
      return [{ type: 'ResultExpired', data: { expiredAt: command.now.toISOString() } }];

    case 'CorrectPageText':
      return correctPageText(state, command);

    case 'RecordReexport':
      assertCorrectable(state, command.now);
      // An older re-export (a later correction's task already ran) or one recorded before: nothing new.
      if (command.correctionVersion <= state.exportedCorrectionVersion) return [];
      if (command.correctionVersion > state.correctionVersion) throw new Error(`no correction ${command.correctionVersion} to export`);
      return [
        {
          type: 'ResultReexported',
          data: {
            correctionVersion: command.correctionVersion,
            correctedLines: command.correctedLines,
            archiveKey: command.archiveKey,
            archiveBytes: command.archiveBytes,
            archiveSha256: command.archiveSha256,
            exportedAt: command.now.toISOString(),
          },
        },
      ];
  }
}

/** The text a line of a page reads now: its last correction, else the machine's reading. */
export function currentLineText(state: JobState, page: number, lineId: string, machineText: string): string {
  return state.correctedLines[page]?.[lineId] ?? machineText;
}

function correctPageText(state: JobState, command: Extract<JobCommand, { type: 'CorrectPageText' }>): JobEvent[] {
  assertCorrectable(state, command.now);
  assertPage(state, command.page);
  const seen = new Set<string>();
  const lines: Array<{ id: string; before: string; after: string }> = [];
  for (const { id, text } of command.lines) {
    if (seen.has(id)) throw new Error(`line ${id} given twice`);
    seen.add(id);
    const machine = command.machineText[id];
    if (machine === undefined) reject('unknown_line', `Page ${command.page} has no line ${JSON.stringify(id)}.`);
    const before = currentLineText(state, command.page, id, machine);
    // A line sent with the text it has is not a change.
    if (before !== text) lines.push({ id, before, after: text });
  }
  if (lines.length === 0) return [];
  return [{ type: 'PageTextCorrected', data: { page: command.page, lines, actor: command.actor, correctedAt: command.now.toISOString() } }];
}

/** Corrections and their re-exports need a done job whose result has not expired. */
function assertCorrectable(state: JobState, now: Date): void {
  if (state.status === 'cancelled') reject('job_cancelled');
  if (state.status === 'failed') reject('job_already_finished', 'The job failed: it has no result to correct.');
  if (state.status !== 'done') reject('job_not_done', `The job is ${state.status}; its text can be corrected once it is done.`);
  if (state.resultExpired || now.getTime() >= Date.parse(state.expiresAt ?? '')) reject('job_expired');
}

function submit(state: JobState, command: Extract<JobCommand, { type: 'SubmitJob' }>): JobEvent[] {
  if (state.status !== null) reject('job_already_exists');
  if (command.pages.length === 0) throw new Error('a job needs at least one page');
  const expiresAt = new Date(command.now.getTime() + command.retentionSeconds * 1000);
  return [
    {
      type: 'JobQueued',
      data: {
        jobId: command.jobId,
        accountId: command.accountId,
        keyId: command.keyId,
        pageCount: command.pages.length,
        pages: command.pages,
        options: command.options,
        uploadKey: command.uploadKey,
        createdAt: command.now.toISOString(),
        expiresAt: expiresAt.toISOString(),
        idempotency: command.idempotency,
      },
    },
  ];
}

function startStep(state: JobState, command: Extract<JobCommand, { type: 'StartStep' }>): JobEvent[] {
  assertActive(state);
  const events: JobEvent[] = state.status === 'queued' ? [started(command.now)] : [];
  if (command.page === null) {
    if (command.step !== 'export') throw new Error('only the export step runs per job');
    if (pagesDone(state) < state.pageCount) reject('pages_incomplete');
    if (state.exportStarted) return events;
  } else {
    if (command.step === 'export') throw new Error('the export step runs per job, not per page');
    assertPage(state, command.page);
    if (state.completedPages[command.page] !== undefined) return events;
    // A retried task re-enters steps the page already passed: nothing new happened.
    const current = state.pageSteps[command.page];
    if (current !== undefined && PIPELINE_STEPS.indexOf(current) >= PIPELINE_STEPS.indexOf(command.step)) return events;
  }
  return [...events, { type: 'StepStarted', data: { page: command.page, step: command.step } }];
}

function recordCallbackAttempt(state: JobState, command: Extract<JobCommand, { type: 'RecordCallbackAttempt' }>): JobEvent[] {
  const delivery = state.callback;
  if (delivery === null || delivery.state === 'delivered' || delivery.state === 'abandoned') reject('no_callback');
  // A retried task reports an attempt that is already recorded: nothing new happened.
  if (command.attempt <= delivery.attempts) return [];
  if (command.attempt !== delivery.attempts + 1) throw new Error(`callback attempt ${command.attempt} out of order`);
  const last = command.attempt >= CALLBACK_MAX_ATTEMPTS;
  const delaySeconds = CALLBACK_RETRY_DELAYS_SECONDS[command.attempt - 1] ?? 0;
  const nextAttemptAt =
    command.ok || last ? null : new Date(command.now.getTime() + delaySeconds * command.retryScale * 1000).toISOString();
  const events: JobEvent[] = [
    {
      type: 'CallbackAttempted',
      data: {
        deliveryId: delivery.deliveryId,
        event: delivery.event,
        attempt: command.attempt,
        url: command.url,
        ok: command.ok,
        httpStatus: command.httpStatus,
        error: command.error,
        durationMs: command.durationMs,
        nextAttemptAt,
      },
    },
  ];
  if (!command.ok && last) events.push({ type: 'CallbackAbandoned', data: { deliveryId: delivery.deliveryId, attempts: command.attempt } });
  return events;
}

function started(now: Date): JobEvent {
  return { type: 'JobStarted', data: { startedAt: now.toISOString() } };
}

function assertActive(state: JobState): void {
  if (state.status === 'cancelled') reject('job_cancelled');
  if (state.status === 'done' || state.status === 'failed') reject('job_already_finished');
}

function assertPage(state: JobState, page: number): void {
  if (!Number.isInteger(page) || page < 1 || page > state.pageCount) reject('unknown_page', `The job has no page ${page}.`);
}

/** One line per distinct page warning, naming the pages, for the job's warning_message. */
export function summariseWarnings(state: JobState): string | null {
  const pagesByWarning = new Map<string, number[]>();
  for (const [page, warnings] of Object.entries(state.pageWarnings)) {
    for (const warning of warnings) {
      const pages = pagesByWarning.get(warning) ?? [];
      pages.push(Number(page));
      pagesByWarning.set(warning, pages);
    }
  }
  if (pagesByWarning.size === 0) return null;
  return [...pagesByWarning]
    .map(([warning, pages]) => {
      const sorted = pages.sort((a, b) => a - b);
      const which =
        sorted.length === state.pageCount && state.pageCount > 1 ? 'all pages' : `page${sorted.length > 1 ? 's' : ''} ${sorted.join(', ')}`;
      return `${which}: ${warning}`;
    })
    .join('; ');
}
