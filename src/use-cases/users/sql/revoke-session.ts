// portal_sessions (migration 0010): one session ends (sign out).
import type { Queryable } from '../../../db/database.ts';

export async function revokeSession(db: Queryable, sessionSha256: string): Promise<void> {
  await db.query('update portal_sessions set revoked_at = now() where session_sha256 = $1 and revoked_at is null', [sessionSha256]);
}
