// portal_sessions (migration 0010): the session was seen now (its idle expiry starts again).
import type { Queryable } from '../../../db/database.ts';

export async function touchSession(db: Queryable, sessionSha256: string): Promise<void> {
  await db.query('update portal_sessions set last_seen_at = now() where session_sha256 = $1', [sessionSha256]);
}
