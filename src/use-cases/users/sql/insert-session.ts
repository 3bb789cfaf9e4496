// portal_sessions (migration 0010): a new session, absolute expiry `lifetimeMs` from now.
import type { Queryable } from '../../../db/database.ts';

export interface NewSession {
  sessionSha256: string;
  userId: string;
  accountId: string;
  csrfToken: string;
  address: string;
}

export async function insertSession(db: Queryable, session: NewSession, lifetimeMs: number): Promise<void> {
  await db.query(
    `insert into portal_sessions (session_sha256, user_id, account_id, csrf_token, address, expires_at)
     values ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
    [session.sessionSha256, session.userId, session.accountId, session.csrfToken, session.address, lifetimeMs],
  );
}
