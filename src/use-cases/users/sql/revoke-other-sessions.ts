// portal_sessions (migration 0010): every live session of the user but one ends (a password change
// keeps only the new session it opens for the browser that made it).
import type { Queryable } from '../../../db/database.ts';

export async function revokeOtherSessions(db: Queryable, userId: string, keptSessionSha256: string): Promise<void> {
  await db.query('update portal_sessions set revoked_at = now() where user_id = $1 and session_sha256 <> $2 and revoked_at is null', [
    userId,
    keptSessionSha256,
  ]);
}
