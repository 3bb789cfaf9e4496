// Settings → API keys: list, create (the key shown once), revoke. Through the CLI's own
// use cases (src/use-cases/accounts.ts), so the events are the same; the actor is the user.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { Rejection } from '../../domain/rejections.ts';
import { findKeyAccountId } from '../../projections/api-keys.ts';
import { createApiKey, listApiKeys, revokeApiKey, type CreatedKey } from '../use-cases/accounts.ts';
import type { Flash } from './flash.ts';
import { csrfField, html, notice, time } from './html.ts';
import type { PortalContext } from './portal-context.ts';
import type { Session } from './sessions.ts';
import { PortalHttpError } from './errors.ts';

export const MAX_LABEL_LENGTH = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function registerKeyPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;

  /** The keys; the flash of the form before: a new key (shown this once), a message, a refusal's status. */
  async function keysPage(ctx: Context, session: Session, flash: Flash) {
    const keys = await listApiKeys(runtime.db.pool, session.accountName);
    const rows = keys.map(
      (
        key,
      ) => html`<tr><td>${key.label}</td><td><code>${key.prefix}…</code></td><td>${time(key.created_at)}</td><td>${time(key.last_used_at)}</td>
<td>${key.revoked_at ? html`revoked ${time(key.revoked_at)}` : html`<form class="inline" method="post" action="/portal/settings/keys/${key.id}/revoke" data-confirm="${`Revoke the key “${key.label}”? Requests with it fail from now on.`}">${csrfField(session.csrfToken)}<button type="submit" class="danger" aria-label="${`Revoke ${key.label}`}">Revoke</button></form>`}</td></tr>`,
    );
    const created = flash.secret;
    const shown = created
      ? html`<section class="notice ok" role="status" aria-labelledby="new-key-title"><h2 id="new-key-title">${created.heading}</h2>
<p>Copy it now: it is shown only once.</p><p class="secret" id="new-key">${created.value}</p>
<button type="button" class="quiet" data-copy="new-key" hidden>Copy</button></section>`
      : html``;
    pc.render(
      ctx,
      'API keys',
      html`${shown}${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}
<table><caption class="muted">Keys of ${session.accountName}</caption><thead><tr><th scope="col">Label</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="5">No keys yet.</td></tr>`}</tbody></table>
<h2>New API key</h2>
<form class="stack" method="post" action="/portal/settings/keys">${csrfField(session.csrfToken)}
<label>Label <input type="text" name="label" maxlength="${MAX_LABEL_LENGTH}" required></label>
<button type="submit">Create key</button></form>`,
      session,
      'keys',
      flash.status,
    );
  }

  router.get('/portal/settings/keys', async (ctx) => {
    const session = await pc.requireSession(ctx);
    await keysPage(ctx, session, await pc.takeFlash(ctx));
  });

  // Each form answers 303 to the keys page (Post/Redirect/Get): a reload of the page after a new
  // key neither makes a second one nor shows this one again.
  const back = (ctx: Context, flash: Flash) => pc.redirectWithFlash(ctx, '/portal/settings/keys', flash);

  router.post('/portal/settings/keys', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    const label = (form.get('label') ?? '').trim();
    if (label.length === 0 || label.length > MAX_LABEL_LENGTH) {
      return back(ctx, { notice: { kind: 'error', text: `A label has 1 to ${MAX_LABEL_LENGTH} characters.` }, status: 400 });
    }
    let created: CreatedKey;
    try {
      created = await createApiKey(runtime.bus, session.accountName, label, `user:${session.userId}`);
    } catch (error) {
      if (!(error instanceof Rejection) || error.code !== 'too_many_api_keys') throw error;
      return back(ctx, { notice: { kind: 'error', text: error.message }, status: 409 });
    }
    await back(ctx, { secret: { heading: `New API key “${label}”`, value: created.key } });
  });

  router.post('/portal/settings/keys/:keyId/revoke', async (ctx) => {
    const session = await pc.requireSession(ctx);
    await pc.signedInForm(ctx, session);
    const keyId = String(ctx.params.keyId);
    // Another account's key does not exist for this user.
    if (!UUID.test(keyId) || (await findKeyAccountId(runtime.db.pool, keyId)) !== session.accountId)
      throw new PortalHttpError('not_found', 'There is no such key.');
    await revokeApiKey(runtime.bus, keyId, `user:${session.userId}`);
    await back(ctx, { notice: { kind: 'ok', text: 'The key is revoked.' } });
  });
}
