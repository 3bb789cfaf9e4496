// Appends events to one stream, in the caller's transaction. The inline projections (this
// process's version of them) run inside the same SQL call (hwr_append_to_stream), which also
// holds the stream's append lock until the transaction ends.
//
// Two consistency checks (migrations/0006_page_scoped_appends.sql):
//  - whole stream: the stream must still be at `expectedVersion`;
//  - scoped: no event of the scope (the job-level events, plus one page's events when
//    `scope.page` is set) was appended after `expectedVersion`, the last version the caller
//    read of that scope. Events of other pages do not conflict.
import { EVENT_SCHEMA_VERSIONS, type DomainEvent, type EventMetadata, type RecordedEvent } from '../../domain/events.ts';
import type { Queryable } from '../db/database.ts';
import { ConcurrencyError } from './concurrency-error.ts';
import { PROJECTION_DISPATCHER } from './install-projections.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './recorded-event.ts';

/** A stream's job-level events (`page: null`), or those and one page's events. */
export interface AppendScope {
  page: number | null;
}

export interface AppendOptions {
  /** Check the scope instead of the whole stream's version. */
  scope?: AppendScope;
  /**
   * false: the commit does not wait for the disk. Only for facts that a retried task records
   * again if a database crash loses them (a step start); a later durable commit covers them too.
   */
  durable?: boolean;
}

export async function appendToStream(
  db: Queryable,
  streamId: string,
  expectedVersion: number,
  events: readonly DomainEvent[],
  metadata: EventMetadata = {},
  { scope, durable = true }: AppendOptions = {},
): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  const payload = events.map((event) => ({
    type: event.type,
    data: event.data,
    metadata: { ...metadata, schemaVersion: EVENT_SCHEMA_VERSIONS[event.type] },
  }));
  try {
    const result = await db.query<EventRow>(`select ${EVENT_COLUMNS} from hwr_append_to_stream($1, $2, $3, $4, $5, $6, $7)`, [
      PROJECTION_DISPATCHER,
      streamId,
      expectedVersion,
      JSON.stringify(payload),
      scope !== undefined,
      scope?.page ?? null,
      durable,
    ]);
    return result.rows.map(toRecordedEvent);
  } catch (error) {
    if (isVersionConflict(error)) throw new ConcurrencyError(streamId, expectedVersion);
    throw error;
  }
}

function isVersionConflict(error: unknown): boolean {
  const code = (error as { code?: string; constraint?: string }).code;
  // HWR01: the check in hwr_append_to_stream; 23505: a unique index refused a second copy of a fact.
  return code === 'HWR01' || (code === '23505' && (error as { constraint?: string }).constraint === 'events_stream_id_stream_version_key');
}
