import type { RecordedEvent } from '../../domain/events.ts';

/** An event as auditors get it (CLI `hwr jobs events` and GET .../events). */
export function eventJson(event: RecordedEvent) {
  return {
    position: event.globalPosition,
    version: event.streamVersion,
    type: event.type,
    data: event.data,
    metadata: event.metadata,
    recorded_at: event.recordedAt.toISOString(),
  };
}
