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
import { csrfField, html, notice, page } from './html.ts';
import { createSession, ABSOLUTE_TIMEOUT_MS, type Session } from './sessions.ts';
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
  readForm,
  redirect,
  setCookie,
} from './web.ts';
import { PortalHttpError } from './errors.ts';
import { registerKeyPages } from './keys-pages.ts';
import { registerJobPages } from './jobs-pages.ts';
import { registerViewerPages } from './viewer-pages.ts';
import { registerAccountPages } from './account-pages.ts';
import { registerNewJobPages } from './new-job-pages.ts';
import type { PortalContext } from './portal-context.ts';

const STATIC_DIR = path.join(import.meta.dirname, 'static');
const STATIC_FILES: Record<string, string> = { 'portal.css': 'text/css; charset=utf-8', 'portal.js': 'text/javascript; charset=utf-8' };

class SignInRequired extends Error {}

/** The portal as one middleware: handles `/` and `/portal…`, passes every other path on. */
export function portal(runtime: Runtime): Middleware {
  const names = cookieNames(runtime);
  const router = new Router();
  const statics = new Map<string, Promise<Buffer>>();

  const render: PortalContext['render'] = (ctx, title, body, session, nav, status = 200) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = page({
      title,
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
  };

  router.get('/', (ctx) => redirect(ctx, '/portal'));
  router.get('/portal', async (ctx) => redirect(ctx, (await currentSession(ctx, runtime, names)) ? '/portal/jobs' : '/portal/sign-in'));

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
  const signInForm = (ctx: Context, email: string, error: string | null, status = 200) => {
    const token = anonymousCsrfToken(ctx, names);
    render(
      ctx,
      'Sign in',
      html`${notice('error', error)}<form class="stack" method="post" action="/portal/sign-in">${csrfField(token)}
<label>Email <input type="email" name="email" autocomplete="username" required value="${email}"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form>
<p class="muted">No account yet? Your operator sends you a setup link (<code>hwr users invite</code>).</p>`,
      null,
      undefined,
      status,
    );
  };
  router.get('/portal/sign-in', async (ctx) => {
    if (await currentSession(ctx, runtime, names)) return redirect(ctx, '/portal/jobs');
    signInForm(ctx, '', null);
  });
  router.post('/portal/sign-in', async (ctx) => {
    const form = await readForm(ctx);
    checkAnonymousCsrf(ctx, names, form);
    const email = form.get('email') ?? '';
    const result = await checkSignIn(runtime.bus, email, form.get('password') ?? '', ctx.ip);
    if (!result.ok) {
      if (result.reason === 'throttled') {
        ctx.set('Retry-After', String(THROTTLE_WINDOW_MS / 1000));
        return signInForm(ctx, email, 'Too many failed sign-ins. Wait 15 minutes and try again.', 429);
      }
      return signInForm(ctx, email, 'The email or the password is not right.', 401);
    }
    const session = await createSession(runtime.db.pool, result.user.user_id, result.user.account_id, ctx.ip);
    await recordSignIn(runtime.bus, result.user, ctx.ip, session.id);
    setCookie(ctx, names, names.session, session.id, Math.floor(ABSOLUTE_TIMEOUT_MS / 1000));
    redirect(ctx, '/portal/jobs');
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
  const setupForm = (ctx: Context, token: string, email: string, error: string | null, status = 200) => {
    const csrf = anonymousCsrfToken(ctx, names);
    render(
      ctx,
      'Set your password',
      html`${notice('error', error)}<form class="stack" method="post" action="/portal/setup">${csrfField(csrf)}
<input type="hidden" name="token" value="${token}">
<p>For <strong>${email}</strong>.</p>
<label>New password (at least ${MIN_PASSWORD_LENGTH} characters)
<input type="password" name="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required></label>
<label>Repeat it <input type="password" name="password2" autocomplete="new-password" required></label>
<button type="submit">Set password</button></form>`,
      null,
      undefined,
      status,
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
    setupForm(ctx, token, link.email, null);
  });
  router.post('/portal/setup', async (ctx) => {
    const form = await readForm(ctx);
    checkAnonymousCsrf(ctx, names, form);
    const token = form.get('token') ?? '';
    const link = await inspectSetupLink(runtime.bus, token);
    if (!link.ok) return badLink(ctx, link.reason);
    const password = form.get('password') ?? '';
    if (password !== form.get('password2')) return setupForm(ctx, token, link.email, 'The two passwords differ.', 400);
    try {
      const user = await completeSetup(runtime.bus, token, password);
      // Every earlier session of this user ends with a password set through a link.
      await revokeUserSessions(runtime.db.pool, user.user_id);
    } catch (error) {
      if (error instanceof AccountError && error.code === 'weak_password')
        return setupForm(ctx, token, link.email, error.message, error.status);
      if (error instanceof AccountError || error instanceof Rejection) {
        return badLink(ctx, error.code === 'invite_used' ? 'used' : error.code === 'invite_expired' ? 'expired' : 'invalid');
      }
      throw error;
    }
    render(ctx, 'Password set', html`${notice('ok', 'Your password is set.')}<p><a href="/portal/sign-in">Sign in</a></p>`, null);
  });

  // --- Account: who am I, change password, sign out everywhere ---
  const accountPage = (ctx: Context, session: Session, message: { kind: 'ok' | 'error'; text: string } | null, status = 200) =>
    render(
      ctx,
      'Account',
      html`${message ? notice(message.kind, message.text) : ''}
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
      status,
    );
  router.get('/portal/settings/account', async (ctx) => accountPage(ctx, await pc.requireSession(ctx), null));
  router.post('/portal/settings/password', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    try {
      await changePassword(runtime.bus, session.userId, form.get('current') ?? '', form.get('password') ?? '', ctx.ip);
    } catch (error) {
      if (error instanceof AccountError) {
        if (error.code === 'throttled') ctx.set('Retry-After', String(THROTTLE_WINDOW_MS / 1000));
        return accountPage(ctx, session, { kind: 'error', text: error.message }, error.status);
      }
      throw error;
    }
    // The other sessions end; this one goes on.
    await revokeOtherSessions(runtime.db.pool, session.userId, session.sessionSha256);
    accountPage(ctx, session, { kind: 'ok', text: 'Your password is changed; your other sessions are signed out.' });
  });

  registerKeyPages(router, pc);
  registerNewJobPages(router, pc);
  registerJobPages(router, pc);
  registerViewerPages(router, pc);
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
      if (error instanceof SignInRequired) return redirect(ctx, `/portal/sign-in`);
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
