// The portal's HTTP plumbing: security headers, cookies, form bodies, CSRF, the session.
import { PortalHttpError } from './errors.ts';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { Runtime } from '../runtime/runtime.ts';
import { loadSession, type Session } from './sessions.ts';

/** Strict: scripts and styles from this origin's static files only, no inline script, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function portalHeaders(ctx: Context): void {
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Frame-Options', 'DENY');
  // Setup links carry their token in the query: never send any of our URLs to another site.
  // (same-origin, not no-referrer: under no-referrer a browser's form posts say `Origin: null`.)
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
  ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
  ctx.set('Permissions-Policy', 'camera=(), microphone=(), geolocation=()');
}

export interface CookieNames {
  session: string;
  csrf: string;
  secure: boolean;
}

/** `__Host-` names (bound to this host, path /, Secure) when served over TLS or an https BASE_URL. */
export function cookieNames(runtime: Runtime): CookieNames {
  const secure = runtime.config.tls !== null || runtime.config.baseUrl.startsWith('https:');
  return secure ? { session: '__Host-hwr_session', csrf: '__Host-hwr_csrf', secure } : { session: 'hwr_session', csrf: 'hwr_csrf', secure };
}

export function readCookie(ctx: Context, name: string): string | null {
  for (const part of ctx.get('Cookie').split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return null;
}

/** Set-Cookie written by hand: HttpOnly, SameSite=Lax, Path=/, Secure when configured (also behind a TLS proxy). */
export function setCookie(ctx: Context, names: CookieNames, name: string, value: string, maxAgeSeconds?: number): void {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (names.secure) parts.push('Secure');
  if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${maxAgeSeconds}`);
  ctx.append('Set-Cookie', parts.join('; '));
}

export const MAX_FORM_BYTES = 16 * 1024;

/** An application/x-www-form-urlencoded body (at most 16 KiB). */
export async function readForm(ctx: Context): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new PortalHttpError('form_not_urlencoded', 'Forms are sent as application/x-www-form-urlencoded.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new PortalHttpError('form_too_large', 'The form is too large.');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export function sameToken(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The CSRF token of a signed-out form (sign in, set password): a random value in a cookie that
 * the form repeats (double submit); set here when the browser has none.
 */
export function anonymousCsrfToken(ctx: Context, names: CookieNames): string {
  const existing = readCookie(ctx, names.csrf);
  if (existing && /^[\w-]{43}$/.test(existing)) return existing;
  const token = randomBytes(32).toString('base64url');
  setCookie(ctx, names, names.csrf, token);
  return token;
}

/** A POST of a signed-out form: its _csrf must equal the CSRF cookie. */
export function checkAnonymousCsrf(ctx: Context, names: CookieNames, form: URLSearchParams): void {
  if (!sameToken(form.get('_csrf'), readCookie(ctx, names.csrf)))
    throw new PortalHttpError('form_expired', 'The form has expired or did not come from this site. Reload the page and try again.');
}

/** A POST of a signed-in form: its _csrf must equal the session's token. */
export function checkSessionCsrf(session: Session, form: URLSearchParams): void {
  if (!sameToken(form.get('_csrf'), session.csrfToken))
    throw new PortalHttpError('form_expired', 'The form has expired or did not come from this site. Reload the page and try again.');
}

export async function currentSession(ctx: Context, runtime: Runtime, names: CookieNames): Promise<Session | null> {
  const id = readCookie(ctx, names.session);
  return id ? loadSession(runtime.db.pool, id) : null;
}

export function redirect(ctx: Context, location: string): void {
  ctx.status = 303;
  ctx.set('Location', location);
  ctx.body = '';
}
