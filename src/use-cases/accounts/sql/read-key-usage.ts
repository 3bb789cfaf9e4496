// api_key_usage (migration 0001): when each of these keys was last used; a key never used has no entry.
import type { Queryable } from '../../../db/database.ts';

export async function readKeyUsage(db: Queryable, keyIds: readonly string[]): Promise<Map<string, Date>> {
  const result = await db.query<{ key_id: string; last_used_at: Date }>(
    'select key_id, last_used_at from api_key_usage where key_id = any($1::uuid[])',
    [keyIds],
  );
  return new Map(result.rows.map((row) => [row.key_id, row.last_used_at]));
}
