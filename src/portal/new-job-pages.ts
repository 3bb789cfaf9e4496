// Jobs → New job: a ZIP with the API's options, through the API's own route handler
// (src/http/routes/submit-scan.ts: the same streaming upload, intake checks, options and error
// messages), called in-process with the signed-in user as the caller (actor `user:<id>`, no key).
// The CSRF token travels in the form's action (`?_csrf=`), since the multipart body is read
// only after the caller is known. With the script, image files or a folder are zipped in the
// browser into the same ZIP field (static/portal.js), picked by the list `hwr submit` uses.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { LLM_TIERS, PDF_FORMATS } from '../../domain/events.ts';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import { logRefusalSetting, toProblem } from '../http/problem.ts';
import { receiveScanUpload } from '../http/scan-upload.ts';
import { DEFAULT_PRESET, PRESETS } from '../recognition/correction/presets.ts';
import { accountDefaultModel, accountModels } from '../use-cases/models.ts';
import { IMAGE_EXTENSIONS } from '../shared/scan-files.ts';
import type { Flash } from './flash.ts';
import { html, notice } from './html.ts';
import { modelChoice, modelName, STANDARD } from './model-names.ts';
import type { PortalContext } from './portal-context.ts';
import { sessionUpload } from './session-upload.ts';
import type { Session } from './sessions.ts';
import { PortalHttpError } from './errors.ts';
import { redirect, sameToken } from './web.ts';

export function registerNewJobPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;

  // The API's upload handling, authenticated by the portal session (session-upload.ts).
  const submit = sessionUpload(runtime, receiveScanUpload(runtime));

  const form = async (ctx: Context, session: Session, flash: Flash) => {
    const options = (values: readonly string[], chosen: string) =>
      values.map((value) => html`<option${value === chosen ? html` selected` : ''}>${value}</option>`);
    // No model named: the account's default (docs/models.md); `default`: the standard model.
    const [models, accountDefault] = await Promise.all([
      accountModels(runtime.db.pool, session.accountId),
      accountDefaultModel(runtime.db.pool, session.accountId),
    ]);
    const defaultName = accountDefault.effective !== DEFAULT_MODEL && accountDefault.model ? modelName(accountDefault.model) : STANDARD;
    const modelOptions = html`<option value="" selected>The account’s default: ${defaultName}</option><option value="${DEFAULT_MODEL}">${STANDARD}</option>${models
      .filter((row) => row.state === 'ready')
      .map((row) => html`<option value="${row.model_id}">${modelChoice(row)}</option>`)}`;
    pc.render(
      ctx,
      'New job',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<form class="stack wide" method="post" enctype="multipart/form-data" action="/portal/jobs/new?_csrf=${session.csrfToken}">
<label class="drop">ZIP of page images (drop it here or choose it) <input type="file" id="scan-zip" name="scan_zip" accept=".zip,application/zip" required aria-describedby="page-order"></label>
<fieldset class="pick" data-scan-picker data-zip-input="scan-zip" data-extensions="${[...IMAGE_EXTENSIONS].join(' ')}" hidden>
<legend>Or page images, zipped here in your browser</legend>
<label>Image files <input type="file" multiple accept="${[...IMAGE_EXTENSIONS, '.xml'].join(',')}" data-pick="files"></label>
<label>A folder of images <input type="file" webkitdirectory data-pick="folder"></label>
<p class="muted" data-scan-summary role="status"></p>
</fieldset>
<p class="muted" id="page-order">The pages are taken in the natural order of their names, folders included: numbers count as numbers, so <code>2.jpg</code> before <code>10.jpg</code>, and <code>scans/2.jpg</code> before <code>scans/10.jpg</code>. Name the files in reading order.</p>
<label>Model <select name="model">${modelOptions}</select></label>
<label>Correction tier <select name="llm_tier">${options(LLM_TIERS, 'balanced')}</select></label>
<label>Document type (correction preset) <select name="preset">${options(PRESETS, DEFAULT_PRESET)}</select></label>
<label>PDF <select name="pdf_format">${options(PDF_FORMATS, 'pdfa-2b')}</select></label>
<label>Steps <select name="pipeline_steps">${options(['all', 'layout,recognition', 'layout'], 'all')}</select></label>
<label>Webhook URL (optional) <input type="url" name="webhook_url" placeholder="https://example.org/hook"></label>
<button type="submit">Submit</button></form>`,
      session,
      'jobs',
      flash.status,
    );
  };

  router.get('/portal/jobs/new', async (ctx) => {
    const session = await pc.requireSession(ctx);
    await form(ctx, session, await pc.takeFlash(ctx));
  });

  router.post('/portal/jobs/new', async (ctx) => {
    const session = await pc.requireSession(ctx);
    if (!sameToken(String(ctx.query._csrf ?? ''), session.csrfToken))
      throw new PortalHttpError('form_expired', 'The form has expired or did not come from this site. Reload the page and try again.');
    ctx.state.portalSession = session;
    try {
      await submit(ctx);
    } catch (error) {
      const problem = toProblem(error);
      if (!problem) throw error;
      logRefusalSetting(ctx.state.log, error);
      // The API's own message and status, on the form again after a redirect (a reload sends no
      // upload again), with the Retry-After of a refusal for the moment.
      return pc.redirectWithFlash(ctx, '/portal/jobs/new', {
        notice: { kind: 'error', text: problem.detail },
        status: problem.status,
        retryAfter: problem.headers['Retry-After'],
      });
    }
    const jobId = (ctx.body as { job_id?: string } | undefined)?.job_id;
    if (ctx.status !== 202 || !jobId) throw new Error(`the submission answered ${ctx.status}`);
    ctx.remove('Location');
    redirect(ctx, `/portal/jobs/${jobId}`);
  });
}
