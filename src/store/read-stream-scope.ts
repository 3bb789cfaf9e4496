// The narrow read behind page commands: a stream's events in one scope (job-level events,
// plus one page's events), without the stream's first event, which the caller reads once
// (readStreamHead) and keeps: it is immutable and, for a job, carries every page.
import { isEventType, type RecordedEvent } from '../../domain/events.ts';
import type { Queryable } from '../db/database.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './recorded-event.ts';
import type { AppendScope } from './append-to-stream.ts';

export async function readStreamScope(db: Queryable, streamId: string, scope: AppendScope): Promise<RecordedEvent[]> {
  const result = await db.query<EventRow>(
    `select ${EVENT_COLUMNS} from events
      where stream_id = $1 and stream_version > 1 and (page is null or page = $2)
      order by stream_version`,
    [streamId, scope.page],
  );
  return result.rows.map(toRecordedEvent);
}

/** The stream's first event, or undefined for a stream that does not exist. */
export async function readStreamHead(db: Queryable, streamId: string): Promise<RecordedEvent | undefined> {
  const result = await db.query<EventRow>(`select ${EVENT_COLUMNS} from events where stream_id = $1 and stream_version = 1`, [streamId]);
  return result.rows.map(toRecordedEvent)[0];
}

/**
 * How many events of `type` the stream holds. The type is written into the SQL (it is checked
 * against the event catalog) so that a partial index on it, such as the one on PageCompleted, serves the count.
 */
export async function countStreamEvents(db: Queryable, streamId: string, type: string): Promise<number> {
  if (!isEventType(type)) throw new Error(`unknown event type ${type}`);
  const result = await db.query<{ n: number }>(`select count(*)::int as n from events where stream_id = $1 and type = '${type}'`, [
    streamId,
  ]);
  return result.rows[0].n;
}
