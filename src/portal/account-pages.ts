// Settings → Webhook secret (reveal and rotate, each after re-entering the password) and Usage
// (billed pages per month and per day, jobs not billed, correction tokens by model).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { billedByDay, billedByMonth } from '../../projections/billing.ts';
import { correctionUsageReport } from '../../projections/correction-usage.ts';
import { unbilledJobsByState } from '../../projections/job-status.ts';
import { rotateWebhookSecret } from '../use-cases/accounts.ts';
import { findWebhookSecret } from '../use-cases/accounts/sql/find-webhook-secret.ts';
import { checkSignIn } from '../use-cases/users.ts';
import type { Flash } from './flash.ts';
import { csrfField, html, notice, type Html } from './html.ts';
import type { PortalContext } from './portal-context.ts';
import type { Session } from './sessions.ts';

export function registerAccountPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;

  /** The page; the flash of the form before: the secret (shown this once) or a refusal with its status. */
  const webhookPage = (ctx: Context, session: Session, flash: Flash) =>
    pc.render(
      ctx,
      'Webhook secret',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}${
        flash.secret
          ? html`<section class="notice ok" role="status"><h2>${flash.secret.heading}</h2><p class="secret" id="webhook-secret">${flash.secret.value}</p>
<button type="button" class="quiet" data-copy="webhook-secret" hidden>Copy</button></section>`
          : ''
      }
<p>Callbacks to your <code>webhook_url</code> are signed with this secret (HMAC-SHA256, <code>X-SVC-Signature</code>; docs/callbacks.md). Enter your password to see it or to replace it.</p>
<form class="stack" method="post" action="/portal/settings/webhook/reveal">${csrfField(session.csrfToken)}
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Reveal the secret</button></form>
<h2>Rotate</h2>
<form class="stack" method="post" action="/portal/settings/webhook/rotate" data-confirm="Replace the webhook secret? Callbacks are signed with the new one from now on.">${csrfField(session.csrfToken)}
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit" class="danger">Rotate the secret</button></form>`,
      session,
      'webhook',
      flash.status,
    );

  /** The password again, through sign-in's own check: throttled, failures recorded. */
  async function reauthenticate(ctx: Context, session: Session, password: string): Promise<string | null> {
    const result = await checkSignIn(runtime.bus, session.email, password, ctx.ip);
    if (result.ok && result.user.user_id === session.userId) return null;
    if (!result.ok && result.reason === 'throttled') return 'Too many failed attempts. Wait 15 minutes and try again.';
    return 'The password is not right.';
  }

  router.get('/portal/settings/webhook', async (ctx) => {
    const session = await pc.requireSession(ctx);
    webhookPage(ctx, session, await pc.takeFlash(ctx));
  });

  // Both forms answer 303 to the page (Post/Redirect/Get): a reload sends no password again.
  const back = (ctx: Context, flash: Flash) => pc.redirectWithFlash(ctx, '/portal/settings/webhook', flash);

  router.post('/portal/settings/webhook/reveal', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    const refused = await reauthenticate(ctx, session, form.get('password') ?? '');
    if (refused) return back(ctx, { notice: { kind: 'error', text: refused }, status: 403 });
    const secret = await findWebhookSecret(runtime.db.pool, session.accountId);
    await back(ctx, { secret: { heading: 'Your webhook secret', value: secret ?? '' } });
  });

  router.post('/portal/settings/webhook/rotate', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    const refused = await reauthenticate(ctx, session, form.get('password') ?? '');
    if (refused) return back(ctx, { notice: { kind: 'error', text: refused }, status: 403 });
    const secret = await rotateWebhookSecret(runtime.bus, session.accountName, `user:${session.userId}`);
    await back(ctx, { secret: { heading: 'New webhook secret (the old one no longer signs callbacks)', value: secret } });
  });

  router.get('/portal/usage', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const pool = runtime.db.pool;
    const byMonth = await billedByMonth(pool, session.accountId);
    const byDay = await billedByDay(pool, session.accountId);
    const notBilled = await unbilledJobsByState(pool, session.accountId);
    const tokens = await correctionUsageReport(pool, { accountId: session.accountId });
    const table = (caption: string, headers: string[], rows: Html[], empty: string) =>
      html`<table><caption>${caption}</caption><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="${headers.length}">${empty}</td></tr>`}</tbody></table>`;
    pc.render(
      ctx,
      'Usage',
      html`<p class="muted">Billed pages are those of done jobs (docs/billing.md), counted when they finished (UTC).</p>
${table(
  'Billed pages per month',
  ['Month', 'Jobs', 'Pages'],
  byMonth.map((r) => html`<tr><td>${r.period}</td><td>${r.jobs}</td><td>${r.pages}</td></tr>`),
  'Nothing billed yet.',
)}
${table(
  'Billed pages per day, last 31 days',
  ['Day', 'Jobs', 'Pages'],
  byDay.map((r) => html`<tr><td>${r.period}</td><td>${r.jobs}</td><td>${r.pages}</td></tr>`),
  'Nothing billed in the last 31 days.',
)}
${table(
  'Not billed',
  ['State', 'Jobs', 'Pages'],
  notBilled.map((r) => html`<tr><td>${r.state}</td><td>${r.jobs}</td><td>${r.pages}</td></tr>`),
  'No failed or cancelled jobs.',
)}
${table(
  'Correction tokens by model',
  ['Provider', 'Model', 'Pages', 'Input tokens', 'Output tokens'],
  tokens.map(
    (t) => html`<tr><td>${t.provider}</td><td>${t.model}</td><td>${t.pages}</td><td>${t.input_tokens}</td><td>${t.output_tokens}</td></tr>`,
  ),
  'No LLM correction yet.',
)}`,
      session,
      'usage',
    );
  });
}
