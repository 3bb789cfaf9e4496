// api_key_usage (migration 0001): the key was used now. Operational data, not a fact worth an event.
import type { Queryable } from '../../../db/database.ts';

export async function recordKeyUsage(db: Queryable, keyId: string): Promise<void> {
  await db.query(
    `insert into api_key_usage (key_id, last_used_at) values ($1, now())
     on conflict (key_id) do update set last_used_at = excluded.last_used_at`,
    [keyId],
  );
}
