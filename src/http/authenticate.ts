// API key authentication: `X-API-Key: <key>` or `Authorization: Bearer <key>`.
// Only the key's SHA-256 is stored; a revoked key fails on the very next request.
// Each key has a request rate (rate-limit.ts): past it, 429 rate_limited with Retry-After.
import type { Context, Next } from 'koa';
import { findActiveKey, type ActiveKeyRow } from '../../projections/api-keys.ts';
import { sha256Hex } from '../use-cases/accounts.ts';
import { recordKeyUsage } from '../use-cases/accounts/sql/record-key-usage.ts';
import type { Queryable } from '../db/database.ts';
import { HttpProblem, type HttpProblemCode } from './problem.ts';
import { RateLimiter, type RateLimitSettings } from './rate-limit.ts';

export interface AuthContext {
  accountId: string;
  keyId: string;
  /** Set when a portal user (docs/portal.md), not an API key, calls: `user:<id>`; keyId is then empty. */
  actor?: string;
}

/** The middleware, plus `accept` for a route that finds the key in a query of its own. */
export type Authenticate = ((ctx: Context, next: Next) => Promise<void>) & {
  /** Sets ctx.state.auth from the row a key lookup returned; no row (unknown or revoked key): 401. */
  accept(ctx: Context, row: ActiveKeyRow | undefined): AuthContext;
};

const USAGE_WRITE_INTERVAL_MS = 60_000;

export function authenticate(db: Queryable, rateLimit: RateLimitSettings): Authenticate {
  const lastUsageWrite = new Map<string, number>();
  const limiter = new RateLimiter(rateLimit);
  const accept = (ctx: Context, row: ActiveKeyRow | undefined): AuthContext => {
    if (!row) throw unauthorized('The API key is not valid or has been revoked.', 'invalid_api_key');
    const wait = limiter.take(row.key_id);
    if (wait > 0) {
      // An upload refused here is not read: the connection is not reused for the rest of it.
      if (Number(ctx.get('Content-Length')) > 0 || ctx.get('Transfer-Encoding')) ctx.set('Connection', 'close');
      throw limiter.refusal(wait);
    }
    const auth: AuthContext = { accountId: row.account_id, keyId: row.key_id };
    ctx.state.auth = auth;
    recordUsage(db, row.key_id, lastUsageWrite);
    return auth;
  };
  const middleware = async (ctx: Context, next: Next): Promise<void> => {
    accept(ctx, await findActiveKey(db, presentedKeyHash(ctx)));
    await next();
  };
  return Object.assign(middleware, { accept });
}

/** The SHA-256 of the key the request presents; 401 when it presents none. */
export function presentedKeyHash(ctx: Context): string {
  const key = presentedKey(ctx);
  if (!key) throw unauthorized('An API key is required (X-API-Key or Authorization: Bearer).', 'missing_api_key');
  return sha256Hex(key);
}

function presentedKey(ctx: Context): string | null {
  const header = ctx.get('X-API-Key').trim();
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('Authorization'))?.[1] ?? null;
  // Two different keys: neither is taken on trust (one silently won before).
  if (header && bearer && header !== bearer)
    throw unauthorized('X-API-Key and Authorization: Bearer carry different keys; send one key, in one of them.', 'invalid_api_key');
  return header || bearer;
}

function unauthorized(detail: string, code: HttpProblemCode & ('missing_api_key' | 'invalid_api_key')): HttpProblem {
  return new HttpProblem(code, detail, { headers: { 'WWW-Authenticate': 'Bearer realm="hwr"' } });
}

/** last_used_at, written at most once a minute per key and process, off the request path. */
function recordUsage(db: Queryable, keyId: string, lastWrite: Map<string, number>): void {
  const now = Date.now();
  if (now - (lastWrite.get(keyId) ?? 0) < USAGE_WRITE_INTERVAL_MS) return;
  lastWrite.set(keyId, now);
  recordKeyUsage(db, keyId).catch(() => lastWrite.delete(keyId));
}
