import { upcast, type DomainEvent, type EventMetadata, type RecordedEvent } from '../../domain/events.ts';

export interface EventRow {
  global_position: string;
  stream_id: string;
  stream_version: number;
  type: string;
  data: unknown;
  metadata: EventMetadata;
  transaction_id: string;
  recorded_at: Date;
}

export const EVENT_COLUMNS =
  'global_position, stream_id, stream_version, type, data, metadata, transaction_id::text as transaction_id, recorded_at';

export function toRecordedEvent(row: EventRow): RecordedEvent {
  const event = upcast(row.type, row.data, row.metadata?.schemaVersion ?? 1);
  return {
    globalPosition: String(row.global_position),
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    type: event.type,
    data: event.data,
    metadata: row.metadata ?? {},
    transactionId: String(row.transaction_id),
    recordedAt: row.recorded_at,
  } as RecordedEvent;
}

export function toDomainEvent<E extends DomainEvent>(event: RecordedEvent): E {
  return { type: event.type, data: event.data } as E;
}
