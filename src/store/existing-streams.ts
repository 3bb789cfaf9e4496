// Which of these streams exist: those with a first event. One query for many streams (the
// orphan-blob sweep asks about up to a thousand jobs at once).
import type { Queryable } from '../db/database.ts';

/** The ids among `streamIds` of streams that hold at least one event. */
export async function existingStreams(db: Queryable, streamIds: readonly string[]): Promise<Set<string>> {
  const result = await db.query<{ stream_id: string }>(
    'select stream_id from events where stream_id = any($1::text[]) and stream_version = 1',
    [streamIds],
  );
  return new Set(result.rows.map((row) => row.stream_id));
}
