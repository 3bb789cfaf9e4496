// A job's history in a customer's words (docs/corrections.md, "Timeline"): one entry per event a
// customer cares about (submitted, pages done, corrections, the archive re-exported, callbacks,
// the end), each with who did it by API key label or portal user e-mail, never an id. The raw
// events stay at GET …/events for auditors.
import { jobStreamId, type JobEvent, type RecordedEvent } from '../../domain/events.ts';
import { listAccountKeys } from '../../projections/api-keys.ts';
import { listAccountUsers } from '../../projections/users.ts';
import type { Queryable } from '../db/database.ts';
import { readStream } from '../store/read-stream.ts';

export type TimelineActor = { kind: 'api_key'; label: string } | { kind: 'user'; email: string } | { kind: 'service' };

export interface TimelineEntry {
  /** The event's version in the job's stream (its position in GET …/events). */
  version: number;
  at: string;
  type: string;
  /** One line for people, e.g. `page 2: 3 lines corrected`. */
  summary: string;
  actor: TimelineActor;
  page: number | null;
  /** For a correction: each line's text before and after. */
  lines?: Array<{ id: string; before: string; after: string }>;
}

/** The job's timeline, oldest first (the job is the account's: the caller checked). */
export async function jobTimeline(db: Queryable, accountId: string, jobId: string): Promise<TimelineEntry[]> {
  const [events, keys, users] = await Promise.all([
    readStream(db, jobStreamId(jobId)),
    listAccountKeys(db, accountId),
    listAccountUsers(db, accountId),
  ]);
  const labels = new Map(keys.map((key) => [key.key_id, key.label]));
  const emails = new Map(users.map((user) => [user.user_id, user.email]));
  const actorOf = (event: RecordedEvent): TimelineActor => {
    const actor = event.metadata.actor ?? (event.type === 'JobQueued' ? ((event.data as { keyId?: string }).keyId ?? '') : '');
    if (actor.startsWith('user:')) return { kind: 'user', email: emails.get(actor.slice(5)) ?? 'a removed user' };
    const label = labels.get(actor);
    return label === undefined ? { kind: 'service' } : { kind: 'api_key', label };
  };
  const entries: TimelineEntry[] = [];
  for (const recorded of events) {
    const event = { type: recorded.type, data: recorded.data } as JobEvent;
    const described = describe(event);
    if (described === null) continue;
    let actor = actorOf(recorded);
    // A correction names its actor itself, as it was when it was made.
    if (event.type === 'PageTextCorrected') {
      const by = event.data.actor;
      actor = by.kind === 'user' ? { kind: 'user', email: by.email } : { kind: 'api_key', label: by.label };
    }
    entries.push({
      version: recorded.streamVersion,
      at: recorded.recordedAt.toISOString(),
      type: recorded.type,
      summary: described.summary,
      actor,
      page: described.page,
      ...(event.type === 'PageTextCorrected' ? { lines: event.data.lines } : {}),
    });
  }
  return entries;
}

const plural = (count: number, word: string): string => `${count} ${word}${count === 1 ? '' : 's'}`;

/** An event in words; null for the ones a customer does not need (a page entering a step). */
function describe(event: JobEvent): { summary: string; page: number | null } | null {
  switch (event.type) {
    case 'JobQueued':
      return { summary: `submitted: ${plural(event.data.pageCount, 'page')}`, page: null };
    case 'JobStarted':
      return { summary: 'processing started', page: null };
    case 'StepStarted':
      return null;
    case 'PageCompleted':
      return { summary: `page ${event.data.page} done: ${plural(event.data.lineCount, 'line')}`, page: event.data.page };
    case 'JobSucceeded':
      return { summary: 'done: the result is ready', page: null };
    case 'JobFailed':
      return { summary: `failed: ${event.data.errorMessage}`, page: event.data.page };
    case 'JobCancelled':
      return { summary: 'cancelled', page: null };
    case 'CallbackAttempted': {
      const outcome = event.data.ok ? 'delivered' : `failed${event.data.httpStatus ? ` (HTTP ${event.data.httpStatus})` : ''}`;
      return { summary: `callback ${event.data.event}, attempt ${event.data.attempt}: ${outcome}`, page: null };
    }
    case 'CallbackAbandoned':
      return { summary: `callback abandoned after ${plural(event.data.attempts, 'attempt')}`, page: null };
    case 'ResultExpired':
      return { summary: 'the result expired and its files were deleted', page: null };
    case 'PageTextCorrected':
      return { summary: `page ${event.data.page}: ${plural(event.data.lines.length, 'line')} corrected`, page: event.data.page };
    case 'ResultReexported':
      return {
        summary: `the result was exported again with the corrections (${plural(event.data.correctedLines, 'corrected line')})`,
        page: null,
      };
  }
}
