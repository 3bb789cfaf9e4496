// portal_sessions (migration 0010): every live session of the user ends (sign out everywhere, a
// password set through a setup link); returns how many.
import type { Queryable } from '../../../db/database.ts';

export async function revokeUserSessions(db: Queryable, userId: string): Promise<number> {
  const result = await db.query('update portal_sessions set revoked_at = now() where user_id = $1 and revoked_at is null', [userId]);
  return result.rowCount ?? 0;
}
