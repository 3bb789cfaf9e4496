// Server-side portal sessions (docs/portal.md, "Sessions"): the cookie holds 32 random bytes;
// the table keeps only their SHA-256, the account, a CSRF token, and two expiries: idle (no
// request for IDLE_TIMEOUT_MS) and absolute (ABSOLUTE_TIMEOUT_MS after sign-in). Revocable one
// by one (sign out) or all of a user's at once (sign out everywhere, a password change).
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../use-cases/accounts.ts';
import type { Queryable } from '../db/database.ts';

export const IDLE_TIMEOUT_MS = 2 * 3600 * 1000;
export const ABSOLUTE_TIMEOUT_MS = 12 * 3600 * 1000;
/** last_seen_at is written at most this often per session. */
const TOUCH_INTERVAL_MS = 60 * 1000;

export interface Session {
  sessionSha256: string;
  userId: string;
  accountId: string;
  email: string;
  accountName: string;
  csrfToken: string;
}

export async function createSession(
  db: Queryable,
  userId: string,
  accountId: string,
  address: string,
): Promise<{ id: string; csrfToken: string }> {
  const id = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  await db.query(
    `insert into portal_sessions (session_sha256, user_id, account_id, csrf_token, address, expires_at)
     values ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
    [sha256Hex(id), userId, accountId, csrfToken, address, ABSOLUTE_TIMEOUT_MS],
  );
  return { id, csrfToken };
}

/** The live session of this cookie value, or null (unknown, revoked, idle too long, past its absolute expiry). */
export async function loadSession(db: Queryable, id: string): Promise<Session | null> {
  if (!/^[\w-]{43}$/.test(id)) return null;
  const result = await db.query<{
    session_sha256: string;
    user_id: string;
    account_id: string;
    csrf_token: string;
    email: string;
    name: string;
    last_seen_at: Date;
  }>(
    `select s.session_sha256, s.user_id, s.account_id, s.csrf_token, u.email, a.name, s.last_seen_at
     from portal_sessions s join portal_users u using (user_id) join accounts a on a.account_id = s.account_id
     where s.session_sha256 = $1 and s.revoked_at is null and s.expires_at > now()
       and s.last_seen_at > now() - $2 * interval '1 millisecond'`,
    [sha256Hex(id), IDLE_TIMEOUT_MS],
  );
  const row = result.rows[0];
  if (!row) return null;
  if (Date.now() - row.last_seen_at.getTime() > TOUCH_INTERVAL_MS) {
    await db.query('update portal_sessions set last_seen_at = now() where session_sha256 = $1', [row.session_sha256]);
  }
  return {
    sessionSha256: row.session_sha256,
    userId: row.user_id,
    accountId: row.account_id,
    email: row.email,
    accountName: row.name,
    csrfToken: row.csrf_token,
  };
}

export async function revokeSession(db: Queryable, sessionSha256: string): Promise<void> {
  await db.query('update portal_sessions set revoked_at = now() where session_sha256 = $1 and revoked_at is null', [sessionSha256]);
}

/** Every live session of the user; returns how many. */
export async function revokeUserSessions(db: Queryable, userId: string): Promise<number> {
  const result = await db.query('update portal_sessions set revoked_at = now() where user_id = $1 and revoked_at is null', [userId]);
  return result.rowCount ?? 0;
}
