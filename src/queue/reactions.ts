// What the engine does in reaction to events, decided from the events and the
// state after them. Written to pg-boss in the same transaction as the events:
// no event without its reaction, no reaction for a rolled-back event.
import type { DomainEvent, ModelEvent } from '../../domain/events.ts';
import { pagesDone, type JobState } from '../../domain/job.ts';
import type { ModelState } from '../../domain/model.ts';
import { pagePriority } from './fair-share.ts';
import {
  callbackTaskId,
  exportTaskId,
  reexportTaskId,
  modelTrainingTaskId,
  type ExportTaskData,
  type ModelTrainingTaskData,
  pageTaskId,
  QUEUES,
} from './queues.ts';

/** How long after a correction its re-export starts (later saves within it make it outdated). */
export const REEXPORT_DELAY_MS = 1500;

export type Reaction =
  | { kind: 'send'; queue: string; id: string; data: object; startAfter?: Date; priority?: number }
  | { kind: 'cancel'; queue: string; ids: string[] };

export interface ReactionContext {
  /** The job's completed pages after the events, where `after` does not know them (a page command's state holds its own page only). */
  pagesDone?: number;
  /** The fair-share tag of the job's first page (fair-share.ts); its page tasks get priorities from it. */
  firstPageTag?: number;
}

export function reactionsTo(events: readonly DomainEvent[], after: JobState, context: ReactionContext = {}): Reaction[] {
  const pagesDoneAfter = context.pagesDone ?? pagesDone(after);
  const reactions: Reaction[] = [];
  for (const event of events) {
    switch (event.type) {
      case 'JobQueued':
        event.data.pages.forEach((page, index) => {
          reactions.push({
            kind: 'send',
            queue: QUEUES.page,
            id: pageTaskId(after.jobId, page.pageNumber),
            data: { jobId: after.jobId, page: page.pageNumber },
            priority: pagePriority(context.firstPageTag ?? 0, index),
          });
        });
        break;
      case 'PageCompleted':
        // The append that completes the last page schedules the export.
        if (pagesDoneAfter === after.pageCount) {
          reactions.push({ kind: 'send', queue: QUEUES.export, id: exportTaskId(after.jobId), data: { jobId: after.jobId } });
        }
        break;
      case 'JobSucceeded':
      case 'JobFailed':
        if (after.callback) {
          reactions.push({
            kind: 'send',
            queue: QUEUES.callback,
            id: callbackTaskId(after.jobId, 1),
            data: { jobId: after.jobId, attempt: 1 },
          });
        }
        if (event.type === 'JobFailed') reactions.push(cancelPendingTasks(after));
        break;
      case 'CallbackAttempted':
        if (event.data.nextAttemptAt !== null) {
          const attempt = event.data.attempt + 1;
          reactions.push({
            kind: 'send',
            queue: QUEUES.callback,
            id: callbackTaskId(after.jobId, attempt),
            data: { jobId: after.jobId, attempt },
            startAfter: new Date(event.data.nextAttemptAt),
          });
        }
        break;
      case 'JobCancelled':
        reactions.push(cancelPendingTasks(after));
        break;
      case 'PageTextCorrected': {
        // A correction schedules a re-export of the archive, a moment later: saves in a row (a
        // person going down a page) end in one export, the newest's; older tasks find themselves
        // outdated and drop (docs/decisions/0032-corrections-are-events-and-schedule-a-re-export.md).
        const data: ExportTaskData = { jobId: after.jobId, correctionVersion: after.correctionVersion };
        reactions.push({
          kind: 'send',
          queue: QUEUES.export,
          id: reexportTaskId(after.jobId, after.correctionVersion),
          data,
          startAfter: new Date(Date.parse(event.data.correctedAt) + REEXPORT_DELAY_MS),
        });
        break;
      }
      default:
        break;
    }
  }
  return reactions;
}

/**
 * A model's reactions: a queued training becomes one task of the model-training queue (its id
 * derived from the model, so a retried append inserts one); a cancelled one takes its task back
 * (a trainer running it sees the cancel in the log, as page tasks do, ADR 0017).
 */
export function modelReactionsTo(events: readonly ModelEvent[], after: ModelState): Reaction[] {
  const reactions: Reaction[] = [];
  for (const event of events) {
    if (event.type === 'ModelTrainingQueued') {
      const data: ModelTrainingTaskData = { modelId: after.modelId };
      reactions.push({ kind: 'send', queue: QUEUES.modelTraining, id: modelTrainingTaskId(after.modelId), data });
    } else if (event.type === 'ModelTrainingCancelled') {
      reactions.push({ kind: 'cancel', queue: QUEUES.modelTraining, ids: [modelTrainingTaskId(after.modelId)] });
    }
  }
  return reactions;
}

function cancelPendingTasks(state: JobState): Reaction {
  return { kind: 'cancel', queue: QUEUES.page, ids: state.pages.map((page) => pageTaskId(state.jobId, page.pageNumber)) };
}
