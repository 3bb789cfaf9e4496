// A projection: a read model kept in tables by SQL. `apply` is the PL/pgSQL body of
// a function `(e events) returns void` that applies one event; it runs inline in the
// append transaction and again, unchanged, when the log is replayed (rebuild/verify).
// Rules for `apply`: unqualified table names (a replay points search_path at scratch
// tables), and no clock or randomness: use e.recorded_at, so a replay is exact.
import type { EventType } from '../domain/events.ts';

export interface Projection {
  name: string;
  /** Tables this projection owns (created by migrations). */
  tables: string[];
  handles: EventType[];
  apply: string;
}
