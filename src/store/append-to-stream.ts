// Appends events to one stream at an expected version, in the caller's transaction.
// The inline projections run inside the same SQL call (hwr_append_events).
import { EVENT_SCHEMA_VERSIONS, type DomainEvent, type EventMetadata, type RecordedEvent } from '../../domain/events.ts';
import type { Queryable } from '../db/database.ts';
import { ConcurrencyError } from './concurrency-error.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './recorded-event.ts';

export async function appendToStream(
  db: Queryable,
  streamId: string,
  expectedVersion: number,
  events: readonly DomainEvent[],
  metadata: EventMetadata = {},
): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  const payload = events.map((event) => ({
    type: event.type,
    data: event.data,
    metadata: { ...metadata, schemaVersion: EVENT_SCHEMA_VERSIONS[event.type] },
  }));
  try {
    const result = await db.query<EventRow>(`select ${EVENT_COLUMNS} from hwr_append_events($1, $2, $3)`, [
      streamId,
      expectedVersion,
      JSON.stringify(payload),
    ]);
    return result.rows.map(toRecordedEvent);
  } catch (error) {
    if (isVersionConflict(error)) throw new ConcurrencyError(streamId, expectedVersion);
    throw error;
  }
}

function isVersionConflict(error: unknown): boolean {
  const code = (error as { code?: string; constraint?: string }).code;
  // HWR01: the version check in hwr_append_events; 23505: a concurrent append won the unique index.
  return code === 'HWR01' || (code === '23505' && (error as { constraint?: string }).constraint === 'events_stream_id_stream_version_key');
}
