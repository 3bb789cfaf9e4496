// A job's state, folded from its events. Pure.
import type { JobEvent, JobOptions, PageSource, PipelineStep } from './events.ts';
import { derivedUuid } from './ids.ts';

export type JobStatus = 'queued' | 'processing' | 'done' | 'failed' | 'cancelled';
export const TERMINAL_STATUSES: readonly JobStatus[] = ['done', 'failed', 'cancelled'];

export interface CallbackDelivery {
  deliveryId: string;
  event: 'job.completed' | 'job.failed';
  attempts: number;
  state: 'pending' | 'retrying' | 'delivered' | 'abandoned';
  nextAttemptAt: string | null;
}

export interface JobState {
  /** Number of events folded (the stream version). */
  version: number;
  status: JobStatus | null;
  jobId: string;
  accountId: string;
  pageCount: number;
  pages: PageSource[];
  options: JobOptions | null;
  createdAt: string | null;
  expiresAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** Step each page has entered (pages not in the map have not started). */
  pageSteps: Record<number, PipelineStep>;
  /** Result blob key of each completed page. */
  completedPages: Record<number, string>;
  pageWarnings: Record<number, string[]>;
  exportStarted: boolean;
  errorMessage: string | null;
  warningMessage: string | null;
  archiveKey: string | null;
  resultExpired: boolean;
  callback: CallbackDelivery | null;
  /** The corrected text of each corrected line, by page and line id (PageTextCorrected); the machine reading stays in the page result. */
  correctedLines: Record<number, Record<string, string>>;
  /** Each page's text version: how many corrections it has had (0: the machine reading). */
  pageTextVersions: Record<number, number>;
  /** The job's corrections so far (PageTextCorrected events). */
  correctionVersion: number;
  /** The corrections the recorded archive holds (ResultReexported; 0: the first export). */
  exportedCorrectionVersion: number;
}

export function initialJobState(): JobState {
  return {
    version: 0,
    status: null,
    jobId: '',
    accountId: '',
    pageCount: 0,
    pages: [],
    options: null,
    createdAt: null,
    expiresAt: null,
    startedAt: null,
    finishedAt: null,
    pageSteps: {},
    completedPages: {},
    pageWarnings: {},
    exportStarted: false,
    errorMessage: null,
    warningMessage: null,
    archiveKey: null,
    resultExpired: false,
    callback: null,
    correctedLines: {},
    pageTextVersions: {},
    correctionVersion: 0,
    exportedCorrectionVersion: 0,
  };
}

export function pagesDone(state: JobState): number {
  return Object.keys(state.completedPages).length;
}

export function isTerminal(state: JobState): boolean {
  return state.status !== null && TERMINAL_STATUSES.includes(state.status);
}

export function evolveJob(state: JobState, event: JobEvent): JobState {
  const next: JobState = { ...state, version: state.version + 1 };
  switch (event.type) {
    case 'JobQueued': {
      const data = event.data;
      return {
        ...next,
        status: 'queued',
        jobId: data.jobId,
        accountId: data.accountId,
        pageCount: data.pageCount,
        pages: data.pages,
        options: data.options,
        createdAt: data.createdAt,
        expiresAt: data.expiresAt,
      };
    }
    case 'JobStarted':
      return { ...next, status: 'processing', startedAt: event.data.startedAt };
    case 'StepStarted':
      if (event.data.page === null) return { ...next, exportStarted: true };
      return { ...next, pageSteps: { ...state.pageSteps, [event.data.page]: event.data.step } };
    case 'PageCompleted':
      return {
        ...next,
        completedPages: { ...state.completedPages, [event.data.page]: event.data.resultKey },
        pageWarnings: { ...state.pageWarnings, [event.data.page]: event.data.warnings },
      };
    case 'JobSucceeded':
      return {
        ...next,
        status: 'done',
        finishedAt: event.data.finishedAt,
        archiveKey: event.data.archiveKey,
        warningMessage: event.data.warningMessage,
        callback: pendingCallback(state, 'job.completed', event.data.finishedAt),
      };
    case 'JobFailed':
      return {
        ...next,
        status: 'failed',
        finishedAt: event.data.finishedAt,
        errorMessage: event.data.errorMessage,
        callback: pendingCallback(state, 'job.failed', event.data.finishedAt),
      };
    case 'JobCancelled':
      return { ...next, status: 'cancelled', finishedAt: event.data.cancelledAt };
    case 'CallbackAttempted': {
      const data = event.data;
      return {
        ...next,
        callback: {
          deliveryId: data.deliveryId,
          event: data.event,
          attempts: data.attempt,
          state: data.ok ? 'delivered' : data.nextAttemptAt ? 'retrying' : 'abandoned',
          nextAttemptAt: data.nextAttemptAt,
        },
      };
    }
    case 'CallbackAbandoned':
      return state.callback ? { ...next, callback: { ...state.callback, state: 'abandoned', nextAttemptAt: null } } : next;
    case 'ResultExpired':
      return { ...next, resultExpired: true };
    case 'PageTextCorrected': {
      const { page, lines } = event.data;
      const corrected = { ...state.correctedLines[page] };
      for (const line of lines) corrected[line.id] = line.after;
      return {
        ...next,
        correctedLines: { ...state.correctedLines, [page]: corrected },
        pageTextVersions: { ...state.pageTextVersions, [page]: (state.pageTextVersions[page] ?? 0) + 1 },
        correctionVersion: state.correctionVersion + 1,
      };
    }
    case 'ResultReexported':
      return { ...next, archiveKey: event.data.archiveKey, exportedCorrectionVersion: event.data.correctionVersion };
  }
}

function pendingCallback(state: JobState, event: CallbackDelivery['event'], at: string): CallbackDelivery | null {
  if (!state.options?.webhookUrl) return null;
  return { deliveryId: deliveryIdFor(state.jobId, event), event, attempts: 0, state: 'pending', nextAttemptAt: at };
}

/** Sent as `event_id`: the same on every retry and every replay. */
export function deliveryIdFor(jobId: string, event: string): string {
  return derivedUuid('hwr-callback', jobId, event);
}

export function foldJob(events: readonly JobEvent[]): JobState {
  return events.reduce(evolveJob, initialJobState());
}
