// Server-side portal sessions (docs/portal.md, "Sessions"): the cookie holds 32 random bytes;
// the table keeps only their SHA-256, the account, a CSRF token, and two expiries: idle (no
// request for IDLE_TIMEOUT_MS) and absolute (ABSOLUTE_TIMEOUT_MS after sign-in). Revocable one
// by one (sign out) or all of a user's at once (sign out everywhere, a password change).
// The table's statements are in src/use-cases/users/sql/ (the revocations are called from portal.ts).
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../use-cases/accounts.ts';
import { findLiveSession } from '../use-cases/users/sql/find-live-session.ts';
import { insertSession } from '../use-cases/users/sql/insert-session.ts';
import { touchSession } from '../use-cases/users/sql/touch-session.ts';
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
  await insertSession(db, { sessionSha256: sha256Hex(id), userId, accountId, csrfToken, address }, ABSOLUTE_TIMEOUT_MS);
  return { id, csrfToken };
}

/** The live session of this cookie value, or null (unknown, revoked, idle too long, past its absolute expiry). */
export async function loadSession(db: Queryable, id: string): Promise<Session | null> {
  if (!/^[\w-]{43}$/.test(id)) return null;
  const row = await findLiveSession(db, sha256Hex(id), IDLE_TIMEOUT_MS);
  if (!row) return null;
  if (Date.now() - row.last_seen_at.getTime() > TOUCH_INTERVAL_MS) await touchSession(db, row.session_sha256);
  return {
    sessionSha256: row.session_sha256,
    userId: row.user_id,
    accountId: row.account_id,
    email: row.email,
    accountName: row.name,
    csrfToken: row.csrf_token,
  };
}
