// Portal user use cases (the portal and `hwr users` call them): invite (setup link), list an
// account's users, set the password through a link, sign in (with throttling), change the
// password. Every security fact goes through the account's decider (domain/account.ts) as an
// event; password hashes, sessions and attempts are operational tables (users/sql/, one file a statement).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Rejection } from '../../domain/rejections.ts';
import { findInviteByTokenHash, findUser, findUserByEmail, listAccountUsers, type UserRow } from '../../projections/users.ts';
import type { Queryable } from '../db/database.ts';
import { requireAccountId, sha256Hex } from './accounts.ts';
import { AccountError } from './errors.ts';
import type { CommandBus } from './command-bus.ts';
import { hashPassword, passwordProblem, verifyDecoy, verifyPassword } from './users/passwords.ts';
import { countFailedSignIns } from './users/sql/count-failed-sign-ins.ts';
import { deleteOldSignInAttempts } from './users/sql/delete-old-sign-in-attempts.ts';
import { deleteSignInAttempt } from './users/sql/delete-sign-in-attempt.ts';
import { findPasswordHash } from './users/sql/find-password-hash.ts';
import { insertSignInAttempt } from './users/sql/insert-sign-in-attempt.ts';
import { markSignInAttemptOk } from './users/sql/mark-sign-in-attempt-ok.ts';
import { savePasswordHash } from './users/sql/save-password-hash.ts';

/** A setup link works once, for this long. */
export const INVITE_TTL_MS = 72 * 3600 * 1000;
/** Sign-in throttling (docs/portal.md): failures counted over this window... */
export const THROTTLE_WINDOW_MS = 15 * 60 * 1000;
/** ...at most this many per email (the user's sign-in identity)... */
export const MAX_FAILURES_PER_EMAIL = 5;
/** ...and this many per client address, whatever the emails. */
export const MAX_FAILURES_PER_ADDRESS = 20;

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();
const EMAIL = /^[^\s@<>"']{1,64}@[^\s@<>"']{1,190}\.[^\s@<>"']{2,}$/;

export interface Invitation {
  userId: string;
  email: string;
  url: string;
  expiresAt: Date;
}

/** Invites `email` to `accountName`'s portal; an existing user of the account gets a new setup link (a reset). */
export async function inviteUser(
  bus: CommandBus,
  accountName: string,
  rawEmail: string,
  baseUrl: string,
  actor = 'cli',
): Promise<Invitation> {
  const email = normalizeEmail(rawEmail);
  if (!EMAIL.test(email)) throw new AccountError('invalid_email', `not an email address: ${rawEmail}`);
  const accountId = await requireAccountId(bus.db.pool, accountName);
  const existing = await findUserByEmail(bus.db.pool, email);
  if (existing && existing.account_id !== accountId) throw new AccountError('user_exists', `${email} is a user of another account`);
  const userId = existing?.user_id ?? randomUUID();
  const token = randomBytes(32).toString('base64url');
  const now = new Date();
  const expiresAt = new Date(now.getTime() + INVITE_TTL_MS);
  try {
    await bus.account(
      accountId,
      { type: 'InviteUser', userId, email, inviteId: randomUUID(), tokenSha256: sha256Hex(token), expiresAt, now },
      { actor },
    );
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new AccountError('user_exists', `${email} is already a user`);
    throw error;
  }
  return { userId, email, url: `${baseUrl.replace(/\/$/, '')}/portal/setup?token=${token}`, expiresAt };
}

/** The users of `accountName`'s portal, in the order they were invited. */
export async function listUsers(db: Queryable, accountName: string): Promise<UserRow[]> {
  return listAccountUsers(db, await requireAccountId(db, accountName));
}

export type SetupLinkState = { ok: true; email: string } | { ok: false; reason: 'invalid' | 'used' | 'expired' };

/** What a setup link is, without using it. Unknown, used and expired links are told apart only in kind. */
export async function inspectSetupLink(bus: CommandBus, token: string): Promise<SetupLinkState> {
  const invite = token ? await findInviteByTokenHash(bus.db.pool, sha256Hex(token)) : undefined;
  if (!invite) return { ok: false, reason: 'invalid' };
  if (invite.used_at) return { ok: false, reason: 'used' };
  if (Date.now() >= invite.expires_at.getTime()) return { ok: false, reason: 'expired' };
  return { ok: true, email: invite.email };
}

/** Sets the password through a setup link: UserCreated (first time) or PasswordChanged; the link is then spent. */
export async function completeSetup(bus: CommandBus, token: string, password: string, actor = 'portal'): Promise<UserRow> {
  const invite = token ? await findInviteByTokenHash(bus.db.pool, sha256Hex(token)) : undefined;
  if (!invite) throw new AccountError('invite_not_found', 'This setup link is not valid.');
  const problem = passwordProblem(password, invite.email);
  if (problem) throw new AccountError('weak_password', problem);
  const hash = await hashPassword(password);
  try {
    await bus.account(
      invite.account_id,
      { type: 'CompleteSetup', userId: invite.user_id, inviteId: invite.invite_id, now: new Date() },
      { actor: `user:${invite.user_id}`, causationId: actor },
      async (client) => {
        await savePasswordHash(client, invite.user_id, hash);
      },
    );
  } catch (error) {
    if (error instanceof Rejection) throw new Rejection(error.code, setupRefusal(error.code));
    throw error;
  }
  return (await findUser(bus.db.pool, invite.user_id))!;
}

function setupRefusal(code: string): string {
  if (code === 'invite_used') return 'This setup link has already been used.';
  if (code === 'invite_expired') return 'This setup link has expired. Ask for a new one.';
  return 'This setup link is not valid.';
}

/**
 * The signed-in user changes their password (knowing the current one). The current password is
 * checked as a sign-in is (`checkSignIn`: throttled, failures recorded), so a stolen session
 * cannot guess it without limit.
 */
export async function changePassword(bus: CommandBus, userId: string, current: string, next: string, address: string): Promise<void> {
  const user = await findUser(bus.db.pool, userId);
  if (!user) throw new AccountError('user_not_found', 'No such user.');
  const check = await checkSignIn(bus, user.email, current, address);
  if (!check.ok && check.reason === 'throttled')
    throw new AccountError('throttled', 'Too many failed attempts. Wait 15 minutes and try again.');
  if (!check.ok || check.user.user_id !== userId) throw new AccountError('wrong_password', 'The current password is not right.');
  const problem = passwordProblem(next, user.email);
  if (problem) throw new AccountError('weak_password', problem);
  const hash = await hashPassword(next);
  await bus.account(user.account_id, { type: 'ChangePassword', userId, now: new Date() }, { actor: `user:${userId}` }, (client) =>
    savePasswordHash(client, userId, hash),
  );
}

export type SignInResult = { ok: true; user: UserRow } | { ok: false; reason: 'invalid' | 'throttled' };

/**
 * Checks an email and password. Throttled before any password check when the email or the
 * address has too many recent failures. A failure of a known user is a UserSignInFailed event;
 * every attempt is a row of portal_sign_in_attempts. The answer never says which part was wrong.
 *
 * The attempt is recorded as failed before it is counted, and only a right password turns it
 * into a success: attempts sent side by side each count the others, so a burst gets no more
 * password checks than the limit (counting first let 18 parallel guesses through a limit of 5).
 */
export async function checkSignIn(bus: CommandBus, rawEmail: string, password: string, address: string): Promise<SignInResult> {
  const email = normalizeEmail(rawEmail).slice(0, 320);
  const pool = bus.db.pool;
  const since = new Date(Date.now() - THROTTLE_WINDOW_MS);
  const attemptId = await insertSignInAttempt(pool, email, address);
  const counts = await countFailedSignIns(pool, email, address, since);
  // The counts include this attempt. A throttled one checks no password, so it is no failure:
  // its row goes (the attempts racing with it have counted it already), and waiting out the
  // window works even for a user who kept trying.
  if (counts.byEmail > MAX_FAILURES_PER_EMAIL || counts.byAddress > MAX_FAILURES_PER_ADDRESS) {
    await deleteSignInAttempt(pool, attemptId);
    return { ok: false, reason: 'throttled' };
  }
  const user = await findUserByEmail(pool, email);
  const stored = user ? await findPasswordHash(pool, user.user_id) : undefined;
  const ok = user && stored ? await verifyPassword(password.slice(0, 1024), stored) : await verifyDecoy(password.slice(0, 1024));
  if (ok) await markSignInAttemptOk(pool, attemptId);
  await deleteOldSignInAttempts(pool);
  if (!user) return { ok: false, reason: 'invalid' };
  if (!ok) {
    await bus.account(
      user.account_id,
      { type: 'RecordSignInFailure', userId: user.user_id, address, reason: stored ? 'wrong_password' : 'no_password', now: new Date() },
      { actor: 'portal' },
    );
    return { ok: false, reason: 'invalid' };
  }
  return { ok: true, user };
}

/** Records the sign-in; `sessionId` is referred to by a short hash prefix only. */
export async function recordSignIn(bus: CommandBus, user: UserRow, address: string, sessionId: string): Promise<void> {
  const sessionRef = createHash('sha256').update(sessionId).digest('hex').slice(0, 12);
  await bus.account(
    user.account_id,
    { type: 'RecordSignIn', userId: user.user_id, address, sessionRef, now: new Date() },
    { actor: `user:${user.user_id}` },
  );
}
