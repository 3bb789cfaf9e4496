// Reads the whole log in commit-safe order. Positions are handed out when a
// transaction inserts, not when it commits, so `global_position > checkpoint`
// would skip an event whose transaction commits after a later one. Instead read
// only transactions older than every transaction still in flight (the snapshot's
// xmin) and order by (transaction_id, global_position): once a reader passes a
// point, nothing can commit behind it.
import type { RecordedEvent } from '../../domain/events.ts';
import type { Queryable } from '../db/database.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './recorded-event.ts';

export interface LogCheckpoint {
  transactionId: string;
  globalPosition: string;
}

export const LOG_START: LogCheckpoint = { transactionId: '0', globalPosition: '0' };

export interface LogPage {
  events: RecordedEvent[];
  /** Where the next read starts (unchanged when nothing was read). */
  checkpoint: LogCheckpoint;
}

export async function readAll(db: Queryable, after: LogCheckpoint = LOG_START, limit = 1000): Promise<LogPage> {
  const result = await db.query<EventRow>(
    `select ${EVENT_COLUMNS} from events
     where (transaction_id, global_position) > ($1::xid8, $2::bigint)
       and transaction_id < pg_snapshot_xmin(pg_current_snapshot())
     order by transaction_id, global_position
     limit $3`,
    [after.transactionId, after.globalPosition, limit],
  );
  const events = result.rows.map(toRecordedEvent);
  const last = events.at(-1);
  return { events, checkpoint: last ? { transactionId: last.transactionId, globalPosition: last.globalPosition } : after };
}
