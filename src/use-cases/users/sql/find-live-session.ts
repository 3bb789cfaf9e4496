// portal_sessions (migration 0010): the session with this hash unless revoked, past its absolute
// expiry or idle longer than `idleTimeoutMs`. Every portal request runs it, so the user's email
// and the account's name come in the same round trip (it reads portal_users and accounts too).
import type { Queryable } from '../../../db/database.ts';

export interface LiveSessionRow {
  session_sha256: string;
  user_id: string;
  account_id: string;
  csrf_token: string;
  email: string;
  name: string;
  last_seen_at: Date;
}

export async function findLiveSession(db: Queryable, sessionSha256: string, idleTimeoutMs: number): Promise<LiveSessionRow | undefined> {
  const result = await db.query<LiveSessionRow>(
    `select s.session_sha256, s.user_id, s.account_id, s.csrf_token, u.email, a.name, s.last_seen_at
     from portal_sessions s join portal_users u using (user_id) join accounts a on a.account_id = s.account_id
     where s.session_sha256 = $1 and s.revoked_at is null and s.expires_at > now()
       and s.last_seen_at > now() - $2 * interval '1 millisecond'`,
    [sessionSha256, idleTimeoutMs],
  );
  return result.rows[0];
}
