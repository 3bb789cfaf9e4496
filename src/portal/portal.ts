// The customer portal (docs/portal.md): server-rendered pages under /portal in the service's own
// Koa application; `/` redirects there. Every change goes through the same commands and events
// as the CLI (src/use-cases/accounts.ts, src/use-cases/users.ts).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { DATABASE_RETRY_AFTER_SECONDS } from '../http/problem.ts';
import { OUTAGE_NAMES, outageOf } from '../outage/outage.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { csrfField, html, type Html, notice, page } from './html.ts';
import { createSession, ABSOLUTE_TIMEOUT_MS, type Session } from './sessions.ts';
import { type Flash, putFlash, takeFlash } from './flash.ts';
import { sha256Hex } from '../use-cases/accounts.ts';
import { Rejection } from '../../domain/rejections.ts';
import { AccountError } from '../use-cases/errors.ts';
import { changePassword, checkSignIn, completeSetup, inspectSetupLink, recordSignIn, THROTTLE_WINDOW_MS } from '../use-cases/users.ts';
import { MIN_PASSWORD_LENGTH } from '../use-cases/users/passwords.ts';
import { revokeOtherSessions } from '../use-cases/users/sql/revoke-other-sessions.ts';
import { revokeSession } from '../use-cases/users/sql/revoke-session.ts';
import { revokeUserSessions } from '../use-cases/users/sql/revoke-user-sessions.ts';
import {
  anonymousCsrfToken,
  checkAnonymousCsrf,
  checkSessionCsrf,
  cookieNames,
  currentSession,
  portalHeaders,
  readCookie,
  readForm,
  redirect,
  setCookie,
} from './web.ts';
import { PortalHttpError } from './errors.ts';
import { registerKeyPages } from './keys-pages.ts';
import { registerJobPages } from './jobs-pages.ts';
import { registerViewerPages } from './viewer-pages.ts';
import { registerCorrectionPages } from './correction-pages.ts';
import { registerJobTraining } from './job-history.ts';
import { registerAccountPages } from './account-pages.ts';
import { registerNewJobPages } from './new-job-pages.ts';
import { registerModelPages } from './models-pages.ts';
import { registerSearchPages } from './search-pages.ts';
import type { PortalContext } from './portal-context.ts';

const STATIC_DIR = path.join(import.meta.dirname, 'static');
const STATIC_FILES: Record<string, string> = { 'portal.css': 'text/css; charset=utf-8', 'portal.js': 'text/javascript; charset=utf-8' };

class SignInRequired extends Error {}

/** Where a signed-in user goes when no deep link says otherwise. */
const HOME = '/portal/jobs';

/**
 * A deep link to come back to after sign-in (`next`): a path under /portal of this site, as
 * `/portal/…?query`, or null. Never another site: not `//host` nor `/\host` (browsers read a
 * backslash as a slash), no scheme, no control characters, and `..` resolved before the check.
 */
function safeNext(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2048) return null;
  if (!raw.startsWith('/') || raw.startsWith('//') || /[\\\u0000-\u001f\u007f]/.test(raw)) return null;
  const base = 'http://portal.invalid';
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  if (url.origin !== base || (url.pathname !== '/portal' && !url.pathname.startsWith('/portal/'))) return null;
  return `${url.pathname}${url.search}`;
}

/** The sign-in page, carrying the deep link to return to when there is one. */
const signInLocation = (next: string | null): string => (next ? `/portal/sign-in?next=${encodeURIComponent(next)}` : '/portal/sign-in');

/** The portal as one middleware: handles `/` and `/portal…`, passes every other path on. */
export function portal(runtime: Runtime): Middleware {
  const names = cookieNames(runtime);
  const router = new Router();
  const statics = new Map<string, Promise<Buffer>>();

  const render: PortalContext['render'] = (ctx, title, body, session, nav, status = 200, heading?: Html) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = page({
      title,
      heading,
      body,
      nav,
      user: session && { email: session.email, accountName: session.accountName, csrfToken: session.csrfToken },
    });
  };
  const pc: PortalContext = {
    runtime,
    names,
    render,
    async requireSession(ctx) {
      const session = await currentSession(ctx, runtime, names);
      if (session) return session;
      if (ctx.method === 'GET' || ctx.method === 'HEAD') throw new SignInRequired();
      throw new PortalHttpError('signed_out', 'You are signed out. Sign in and try again.');
    },
    async signedInForm(ctx, session) {
      const form = await readForm(ctx);
      checkSessionCsrf(session, form);
      return form;
    },
    async redirectWithFlash(ctx, location, flash, owner = readCookie(ctx, names.session) ?? undefined) {
      if (owner) await putFlash(runtime.db.pool, owner, new URL(location, 'http://portal.invalid').pathname, flash);
      redirect(ctx, location);
    },
    async takeFlash(ctx, owner = readCookie(ctx, names.session) ?? undefined) {
      if (ctx.method !== 'GET' || !owner) return {};
      const flash = await takeFlash(runtime.db.pool, owner, ctx.path);
      if (flash.retryAfter) ctx.set('Retry-After', flash.retryAfter);
      return flash;
    },
  };
  /** The signed-out forms' flashes belong to the browser's CSRF cookie (the only thing it holds). */
  const anonymousOwner = (ctx: Context): string | undefined => readCookie(ctx, names.csrf) ?? undefined;

  router.get('/', (ctx) => redirect(ctx, '/portal'));
  router.get('/portal', async (ctx) => redirect(ctx, (await currentSession(ctx, runtime, names)) ? HOME : '/portal/sign-in'));

  router.get('/portal/static/:file', async (ctx) => {
    const file = String(ctx.params.file);
    const type = STATIC_FILES[file];
    if (!type) throw new PortalHttpError('not_found', 'No such file.');
    if (!statics.has(file)) statics.set(file, readFile(path.join(STATIC_DIR, file)));
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = await statics.get(file)!;
  });

  // --- Sign in / out ---
  const signInForm = (ctx: Context, flash: Flash, next: string | null) => {
    const token = anonymousCsrfToken(ctx, names);
    render(
      ctx,
      'Sign in',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<form class="stack" method="post" action="/portal/sign-in">${csrfField(token)}${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
<label>Email <input type="email" name="email" autocomplete="username" required value="${flash.email ?? ''}"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form>
<p class="muted">No account yet? Your operator sends you a setup link (<code>hwr users invite</code>).</p>`,
      null,
      undefined,
      flash.status,
    );
  };
  router.get('/portal/sign-in', async (ctx) => {
    const next = safeNext(ctx.query.next);
    if (await currentSession(ctx, runtime, names)) return redirect(ctx, next ?? HOME);
    const owner = anonymousOwner(ctx);
    signInForm(ctx, await pc.takeFlash(ctx, owner), next);
  });
  // A refused sign-in redirects too: a reload of its answer would send the password again and
  // count another failure. The page it leads to says why, with the refusal's status.
  router.post('/portal/sign-in', async (ctx) => {
    const form = await readForm(ctx);
    checkAnonymousCsrf(ctx, names, form);
    const next = safeNext(form.get('next'));
    const email = form.get('email') ?? '';
    const result = await checkSignIn(runtime.bus, email, form.get('password') ?? '', ctx.ip);
    if (!result.ok) {
      const refusal: Flash =
        result.reason === 'throttled'
          ? {
              notice: { kind: 'error', text: 'Too many failed sign-ins. Wait 15 minutes and try again.' },
              status: 429,
              retryAfter: String(THROTTLE_WINDOW_MS / 1000),
            }
          : { notice: { kind: 'error', text: 'The email or the password is not right.' }, status: 401 };
      return pc.redirectWithFlash(ctx, signInLocation(next), { ...refusal, email }, form.get('_csrf') ?? undefined);
    }
    const session = await createSession(runtime.db.pool, result.user.user_id, result.user.account_id, ctx.ip);
    await recordSignIn(runtime.bus, result.user, ctx.ip, session.id);
    setCookie(ctx, names, names.session, session.id, Math.floor(ABSOLUTE_TIMEOUT_MS / 1000));
    redirect(ctx, next ?? HOME);
  });
  router.post('/portal/sign-out', async (ctx) => {
    const session = await currentSession(ctx, runtime, names);
    if (session) {
      await pc.signedInForm(ctx, session);
      await revokeSession(runtime.db.pool, session.sessionSha256);
    }
    setCookie(ctx, names, names.session, '', 0);
    redirect(ctx, '/portal/sign-in');
  });
  router.post('/portal/sign-out-everywhere', async (ctx) => {
    const session = await pc.requireSession(ctx);
    await pc.signedInForm(ctx, session);
    await revokeUserSessions(runtime.db.pool, session.userId);
    setCookie(ctx, names, names.session, '', 0);
    redirect(ctx, '/portal/sign-in');
  });

  // --- Setup link: set the password ---
  const setupForm = (ctx: Context, token: string, email: string, flash: Flash) => {
    const csrf = anonymousCsrfToken(ctx, names);
    render(
      ctx,
      'Set your password',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<form class="stack" method="post" action="/portal/setup">${csrfField(csrf)}
<input type="hidden" name="token" value="${token}">
<p>For <strong>${email}</strong>.</p>
<label>New password (at least ${MIN_PASSWORD_LENGTH} characters)
<input type="password" name="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required></label>
<label>Repeat it <input type="password" name="password2" autocomplete="new-password" required></label>
<button type="submit">Set password</button></form>`,
      null,
      undefined,
      flash.status,
    );
  };
  const badLink = (ctx: Context, reason: 'invalid' | 'used' | 'expired') =>
    render(
      ctx,
      'Setup link not valid',
      notice(
        'error',
        reason === 'used'
          ? 'This setup link has already been used.'
          : reason === 'expired'
            ? 'This setup link has expired. Ask for a new one.'
            : 'This setup link is not valid.',
      ),
      null,
      undefined,
      410,
    );
  router.get('/portal/setup', async (ctx) => {
    const token = String(ctx.query.token ?? '');
    const link = await inspectSetupLink(runtime.bus, token);
    if (!link.ok) return badLink(ctx, link.reason);
    setupForm(ctx, token, link.email, await pc.takeFlash(ctx, anonymousOwner(ctx)));
  });
  // Every outcome redirects: a refusal back to the link's page (which says why, or that the link is
  // no longer valid), the password set on to the sign-in page.
  router.post('/portal/setup', async (ctx) => {
    const form = await readForm(ctx);
    checkAnonymousCsrf(ctx, names, form);
    const owner = form.get('_csrf') ?? undefined;
    const token = form.get('token') ?? '';
    const linkPage = `/portal/setup?token=${encodeURIComponent(token)}`;
    const link = await inspectSetupLink(runtime.bus, token);
    if (!link.ok) return redirect(ctx, linkPage);
    const password = form.get('password') ?? '';
    if (password !== form.get('password2'))
      return pc.redirectWithFlash(ctx, linkPage, { notice: { kind: 'error', text: 'The two passwords differ.' }, status: 400 }, owner);
    try {
      const user = await completeSetup(runtime.bus, token, password);
      // Every earlier session of this user ends with a password set through a link.
      await revokeUserSessions(runtime.db.pool, user.user_id);
    } catch (error) {
      if (error instanceof AccountError && error.code === 'weak_password')
        return pc.redirectWithFlash(ctx, linkPage, { notice: { kind: 'error', text: error.message }, status: error.status }, owner);
      // A link used, expired or unknown meanwhile: its page says which.
      if (error instanceof AccountError || error instanceof Rejection) return redirect(ctx, linkPage);
      throw error;
    }
    await pc.redirectWithFlash(
      ctx,
      '/portal/sign-in',
      { notice: { kind: 'ok', text: 'Your password is set. Sign in with it.' }, email: link.email },
      owner,
    );
  });

  // --- Account: who am I, change password, sign out everywhere ---
  const accountPage = (ctx: Context, session: Session, flash: Flash) =>
    render(
      ctx,
      'Account',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}
<dl><dt>Email</dt><dd>${session.email}</dd><dt>Account</dt><dd>${session.accountName}</dd></dl>
<h2>Change password</h2>
<form class="stack" method="post" action="/portal/settings/password">${csrfField(session.csrfToken)}
<label>Current password <input type="password" name="current" autocomplete="current-password" required></label>
<label>New password (at least ${MIN_PASSWORD_LENGTH} characters) <input type="password" name="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required></label>
<button type="submit">Change password</button></form>
<h2>Sessions</h2>
<form method="post" action="/portal/sign-out-everywhere" data-confirm="Sign out on every device?">${csrfField(session.csrfToken)}
<button type="submit" class="quiet">Sign out everywhere</button></form>`,
      session,
      'account',
      flash.status,
    );
  router.get('/portal/settings/account', async (ctx) => {
    const session = await pc.requireSession(ctx);
    accountPage(ctx, session, await pc.takeFlash(ctx));
  });
  router.post('/portal/settings/password', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    try {
      await changePassword(runtime.bus, session.userId, form.get('current') ?? '', form.get('password') ?? '', ctx.ip);
    } catch (error) {
      if (error instanceof AccountError) {
        const retryAfter = error.code === 'throttled' ? String(THROTTLE_WINDOW_MS / 1000) : undefined;
        return pc.redirectWithFlash(ctx, '/portal/settings/account', {
          notice: { kind: 'error', text: error.message },
          status: error.status,
          retryAfter,
        });
      }
      throw error;
    }
    // This browser goes on in a new session (a new id: whoever learnt the old one, before the
    // change, holds nothing now), and every other session of the user ends, this one's old id with them.
    const renewed = await createSession(runtime.db.pool, session.userId, session.accountId, ctx.ip);
    await revokeOtherSessions(runtime.db.pool, session.userId, sha256Hex(renewed.id));
    setCookie(ctx, names, names.session, renewed.id, Math.floor(ABSOLUTE_TIMEOUT_MS / 1000));
    await pc.redirectWithFlash(
      ctx,
      '/portal/settings/account',
      { notice: { kind: 'ok', text: 'Your password is changed; your other sessions are signed out.' } },
      renewed.id,
    );
  });

  registerKeyPages(router, pc);
  registerNewJobPages(router, pc);
  registerModelPages(router, pc);
  registerJobPages(router, pc);
  registerViewerPages(router, pc);
  registerSearchPages(router, pc);
  registerCorrectionPages(router, pc);
  registerJobTraining(router, pc);
  registerAccountPages(router, pc);

  const routes = router.routes();
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== '/' && ctx.path !== '/portal' && !ctx.path.startsWith('/portal/')) return next();
    portalHeaders(ctx);
    try {
      // Defence in depth beside the CSRF tokens: a browser's POST from another origin is refused.
      const origin = ctx.get('Origin');
      if (
        ctx.method === 'POST' &&
        origin &&
        origin !== `${ctx.protocol}://${ctx.host}` &&
        origin !== new URL(runtime.config.baseUrl).origin
      ) {
        throw new PortalHttpError('form_expired', 'The form did not come from this site.');
      }
      await routes(ctx as Parameters<typeof routes>[0], async () => {
        throw new PortalHttpError('not_found', 'There is no such page.');
      });
    } catch (error) {
      // The page asked for comes back after sign-in (a deep link from an email, a bookmark).
      if (error instanceof SignInRequired) return redirect(ctx, signInLocation(safeNext(ctx.url)));
      const outage = outageOf(error);
      if (outage) {
        // As the API's database_unavailable and storage_unavailable: a moment's outage, not a failure of the page.
        const away = OUTAGE_NAMES[outage];
        runtime.log.warn({ err: error, path: ctx.path }, `portal page failed: the ${away} is unavailable`);
        ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
        render(
          ctx,
          'Unavailable',
          notice('error', `The service cannot reach its ${away} at the moment. Try again in a few seconds.`),
          null,
          undefined,
          503,
        );
        return;
      }
      const status = error instanceof PortalHttpError ? error.status : 500;
      if (status === 500) runtime.log.error({ err: error, path: ctx.path }, 'portal error');
      const session = status === 500 ? null : await currentSession(ctx, runtime, names).catch(() => null);
      render(
        ctx,
        status === 404 ? 'Not found' : status === 403 ? 'Refused' : 'Error',
        notice('error', status === 500 ? 'Something went wrong on our side.' : (error as Error).message),
        session,
        undefined,
        status,
      );
    }
  };
}
