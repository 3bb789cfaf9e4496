import type { RecordedEvent } from '../../domain/events.ts';
import type { Queryable } from '../db/database.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './recorded-event.ts';

/** Every event of one stream, in version order. */
export async function readStream(db: Queryable, streamId: string): Promise<RecordedEvent[]> {
  const result = await db.query<EventRow>(`select ${EVENT_COLUMNS} from events where stream_id = $1 order by stream_version`, [streamId]);
  return result.rows.map(toRecordedEvent);
}
