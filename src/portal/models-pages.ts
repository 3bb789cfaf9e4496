// Models (docs/portal.md, "Models"; docs/models.md): the account's models, training one on
// ground truth, a model's progress and figures, cancelling or retiring it, and the account's
// default model. Through the API's own use cases (use-cases/models.ts), the upload through the
// API's own handler (http/training-upload.ts) with the signed-in user as the caller (actor
// `user:<id>`, no key), as the new-job page submits a scan. The CSRF token of the upload travels in
// the form's action (`?_csrf=`), since the multipart body is read only after the caller is known.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import { Rejection } from '../../domain/rejections.ts';
import type { ModelRow } from '../../projections/models.ts';
import { logRefusalSetting, toProblem } from '../http/problem.ts';
import { receiveTrainingUpload } from '../http/training-upload.ts';
import { IMAGE_EXTENSIONS } from '../shared/scan-files.ts';
import { ModelError } from '../use-cases/errors.ts';
import {
  type AccountDefaultModel,
  accountDefaultModel,
  accountModel,
  accountModels,
  cancelOrRetireModel,
  chooseDefaultModel,
  MAX_LABEL_LENGTH,
} from '../use-cases/models.ts';
import { PortalHttpError } from './errors.ts';
import { csrfField, html, type Html, notice, time } from './html.ts';
import { percent, validationCerChart } from './model-chart.ts';
import { modelChoice, modelName, STANDARD } from './model-names.ts';
import type { PortalContext } from './portal-context.ts';
import { sessionUpload } from './session-upload.ts';
import type { Session } from './sessions.ts';
import { sameToken } from './web.ts';
import { isUuid } from '../shared/uuid.ts';

/** The lines left out of the ground truth, by why, as a customer reads it. */
const SKIPPED_REASONS: Array<[keyof ModelRow['lines_skipped'], string]> = [
  ['noText', 'without text'],
  ['noGeometry', 'without an outline or a baseline'],
  ['outsideImage', 'outside the page image'],
  ['tooSmall', 'too small to read'],
  ['unlearnableCharacters', 'with characters no model can learn'],
];

/** `20.0 % → 10.0 % (−50 %)`: the CER before and after on the held-out lines, with the relative change. */
function beforeAfter(before: number | null, after: number | null): Html {
  if (before === null || after === null) return html`—`;
  const change = before > 0 ? `${after <= before ? '−' : '+'}${Math.round((Math.abs(after - before) / before) * 100)} %` : null;
  return html`${percent(before)} → ${percent(after)}${change ? html` <span class="muted">(${change})</span>` : ''}`;
}

const baseName = (row: ModelRow, byId: Map<string, ModelRow>): Html => {
  if (row.base_model === DEFAULT_MODEL) return html`${STANDARD}`;
  const base = byId.get(row.base_model);
  return base ? html`<a href="/portal/models/${base.model_id}">${modelName(base)}</a>` : html`<code>${row.base_model}</code>`;
};

const notBetterText = 'Not better than its base model on the held-out lines: kept, but your jobs read better without it.';

export function registerModelPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;

  // The API's upload handling, authenticated by the portal session (session-upload.ts).
  const upload = sessionUpload(runtime, receiveTrainingUpload(runtime));

  const metadata = (ctx: Context, session: Session) => ({ actor: `user:${session.userId}`, requestId: ctx.state.requestId as string });

  async function ownModel(ctx: Context, accountId: string): Promise<ModelRow> {
    const modelId = String(ctx.params.modelId);
    try {
      if (isUuid(modelId)) return await accountModel(runtime.db.pool, accountId, modelId.toLowerCase());
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
    }
    // Another account's model does not exist for this user.
    throw new PortalHttpError('not_found', 'There is no such model.');
  }

  /** The button that makes `value` the account's default model, back to the model page `back`. */
  const chooseForm = (session: Session, back: string, value: string, text: string, question: string) =>
    html`<form class="inline" method="post" action="/portal/models/default" data-confirm="${question}">${csrfField(session.csrfToken)}<input type="hidden" name="model" value="${value}"><input type="hidden" name="back" value="${back}"><button type="submit" class="quiet">${text}</button></form>`;

  function defaultSection(session: Session, chosen: AccountDefaultModel, ready: ModelRow[]): Html {
    const current =
      chosen.effective === DEFAULT_MODEL
        ? html`<strong>${STANDARD}</strong>`
        : html`<a href="/portal/models/${chosen.effective}"><strong>${chosen.model ? modelName(chosen.model) : chosen.effective}</strong></a>`;
    const fallback =
      chosen.chosen !== DEFAULT_MODEL && chosen.effective === DEFAULT_MODEL && chosen.model
        ? html` <span class="muted">(${modelName(chosen.model)}, chosen before, is ${chosen.model.state})</span>`
        : '';
    const options = [
      html`<option value="${DEFAULT_MODEL}"${chosen.effective === DEFAULT_MODEL ? html` selected` : ''}>${STANDARD}</option>`,
      ...ready.map(
        (row) =>
          html`<option value="${row.model_id}"${chosen.effective === row.model_id ? html` selected` : ''}>${modelChoice(row)}</option>`,
      ),
    ];
    return html`<section aria-labelledby="default-title"><h2 id="default-title">Default model for new jobs</h2>
<p>Jobs that do not name a model are read with ${current}${fallback}.</p>
<form class="stack" method="post" action="/portal/models/default">${csrfField(session.csrfToken)}
<label>Read new jobs with <select name="model">${options}</select></label>
<button type="submit">Save the default</button></form></section>`;
  }

  router.get('/portal/models', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const flash = await pc.takeFlash(ctx);
    const models = await accountModels(runtime.db.pool, session.accountId);
    const chosen = await accountDefaultModel(runtime.db.pool, session.accountId);
    const byId = new Map(models.map((row) => [row.model_id, row]));
    const rows = models.map(
      (
        row,
      ) => html`<tr><td><a href="/portal/models/${row.model_id}">${modelName(row)}</a>${row.model_id === chosen.effective ? html` <span class="badge">default</span>` : ''}<br><code class="muted">${row.model_id}</code></td>
<td class="state-${row.state}">${row.state}${row.not_better ? html`<br><span class="not-better">not better</span>` : ''}</td><td>${baseName(row, byId)}</td>
<td>${row.lines_total}</td><td>${beforeAfter(row.cer_before, row.cer_after)}</td><td>${time(row.created_at)}</td></tr>`,
    );
    const ready = models.filter((row) => row.state === 'ready');
    pc.render(
      ctx,
      'Models',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<p>A model trained on your own transcribed pages reads your documents’ hand better than the standard model. <a href="/portal/models/new">Train a model</a></p>
<table data-live><caption class="muted">Models of ${session.accountName}, newest first</caption><thead><tr><th scope="col">Model</th><th scope="col">State</th><th scope="col">Trained from</th><th scope="col">Lines</th><th scope="col">CER before → after</th><th scope="col">Created</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="6">No models yet: train one on your transcribed pages.</td></tr>`}</tbody></table>
${defaultSection(session, chosen, ready)}`,
      session,
      'models',
      flash.status,
    );
  });

  router.get('/portal/models/new', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const flash = await pc.takeFlash(ctx);
    const ready = (await accountModels(runtime.db.pool, session.accountId)).filter((row) => row.state === 'ready');
    const offered = (await runtime.trainer()).available;
    pc.render(
      ctx,
      'Train a model',
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}${offered ? '' : notice('warn', 'This service does not train models at the moment: ask your operator to enable training.')}
<p id="truth-help">Upload pages you have transcribed: each page image with its PageXML or ALTO file (as Transkribus and eScriptorium export them, or as your results here, corrected). At least 20 lines with text; a part of them is held out to measure the new model against its base.</p>
<form class="stack wide" method="post" enctype="multipart/form-data" action="/portal/models/new?_csrf=${session.csrfToken}">
<label class="drop">ZIP of page images with their PageXML or ALTO files (drop it here or choose it) <input type="file" id="training-zip" name="training_zip" accept=".zip,application/zip" required aria-describedby="truth-help"></label>
<fieldset class="pick" data-scan-picker data-zip-input="training-zip" data-extensions="${[...IMAGE_EXTENSIONS].join(' ')}" data-layouts="all" hidden>
<legend>Or page images with their PageXML or ALTO files, zipped here in your browser</legend>
<label>Files <input type="file" multiple accept="${[...IMAGE_EXTENSIONS, '.xml'].join(',')}" data-pick="files"></label>
<label>A folder (an export as it is) <input type="file" webkitdirectory data-pick="folder"></label>
<p class="muted" data-scan-summary role="status"></p>
</fieldset>
<label>Name (optional) <input type="text" name="label" maxlength="${MAX_LABEL_LENGTH}"></label>
<label>Train from <select name="base_model"><option value="${DEFAULT_MODEL}" selected>${STANDARD}</option>${ready.map((row) => html`<option value="${row.model_id}">${modelName(row)}</option>`)}</select></label>
<button type="submit">Upload and train</button></form>
<p><a href="/portal/models">All models</a></p>`,
      session,
      'models',
      flash.status,
    );
  });

  router.post('/portal/models/new', async (ctx) => {
    const session = await pc.requireSession(ctx);
    if (!sameToken(String(ctx.query._csrf ?? ''), session.csrfToken))
      throw new PortalHttpError('form_expired', 'The form has expired or did not come from this site. Reload the page and try again.');
    ctx.state.portalSession = session;
    try {
      await upload(ctx);
    } catch (error) {
      const problem = toProblem(error);
      if (!problem) throw error;
      logRefusalSetting(ctx.state.log, error);
      // The API's own message and status, on the form again after a redirect (a reload sends no upload again).
      return pc.redirectWithFlash(ctx, '/portal/models/new', {
        notice: { kind: 'error', text: problem.detail },
        status: problem.status,
        retryAfter: problem.headers['Retry-After'],
      });
    }
    const body = ctx.body as { model_id?: string; lines_total?: number; pages_total?: number } | undefined;
    if (ctx.status !== 202 || !body?.model_id) throw new Error(`the training upload answered ${ctx.status}`);
    ctx.remove('Location');
    const pages = body.pages_total === 1 ? '1 page' : `${body.pages_total} pages`;
    await pc.redirectWithFlash(ctx, `/portal/models/${body.model_id}`, {
      notice: { kind: 'ok', text: `Your ground truth is in: ${body.lines_total} lines on ${pages}. The training is queued.` },
    });
  });

  router.post('/portal/models/default', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    const raw = (form.get('model') ?? '').trim().toLowerCase();
    const back = safeBack(form.get('back'));
    let text: string;
    try {
      if (raw !== DEFAULT_MODEL && !isUuid(raw))
        throw new ModelError('invalid_model', 'Choose the standard model or one of your ready models.');
      const chosen = await chooseDefaultModel(runtime, session.accountId, raw, metadata(ctx, session));
      text = chosen.model
        ? `New jobs are read with ${modelName(chosen.model)} from now on.`
        : `New jobs are read with the ${STANDARD.toLowerCase()} from now on.`;
    } catch (error) {
      if (!(error instanceof ModelError)) throw error;
      return pc.redirectWithFlash(ctx, back, { notice: { kind: 'error', text: error.message }, status: error.status });
    }
    await pc.redirectWithFlash(ctx, back, { notice: { kind: 'ok', text } });
  });

  router.get('/portal/models/:modelId', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const row = await ownModel(ctx, session.accountId);
    const flash = await pc.takeFlash(ctx);
    const chosen = await accountDefaultModel(runtime.db.pool, session.accountId);
    const models = await accountModels(runtime.db.pool, session.accountId);
    const byId = new Map(models.map((model) => [model.model_id, model]));
    const skipped = SKIPPED_REASONS.map(([key, words]) => [row.lines_skipped[key] ?? 0, words] as const).filter(([count]) => count > 0);
    const skippedTotal = skipped.reduce((sum, [count]) => sum + count, 0);
    const trained = row.cer_before !== null && row.cer_after !== null;
    const live = row.state === 'queued' || row.state === 'training';
    const isDefault = chosen.effective === row.model_id;
    const progress =
      row.epoch === null
        ? html`<p class="muted">${row.state === 'queued' ? 'Waiting for a trainer.' : row.state === 'training' ? 'Training: the first epoch is under way.' : 'No epoch was recorded.'}</p>`
        : html`<dl><dt>Epoch</dt><dd>${row.epoch}</dd><dt>Training loss</dt><dd>${row.train_loss === null ? '—' : row.train_loss.toFixed(3)}</dd><dt>Validation CER</dt><dd>${row.validation_cer === null ? '—' : percent(row.validation_cer)}</dd></dl>
${validationCerChart(row.progress_history)}
<details><summary>Every epoch</summary><table><thead><tr><th scope="col">Epoch</th><th scope="col">Training loss</th><th scope="col">Validation CER</th><th scope="col">Recorded</th></tr></thead>
<tbody>${row.progress_history.map((point) => html`<tr><td>${point.epoch}</td><td>${point.train_loss.toFixed(3)}</td><td>${percent(point.validation_cer)}</td><td>${time(point.recorded_at)}</td></tr>`)}</tbody></table></details>`;
    const figures = trained
      ? html`<h2>Before and after</h2>
${row.not_better ? notice('warn', notBetterText) : ''}
<p class="muted">Read on ${row.lines_validation} held-out lines that the model did not train on, by its base model (before) and by this model (after). CER: the share of characters read wrong; WER: of words.</p>
<table class="figures"><thead><tr><th scope="col">Measure</th><th scope="col">Before → after</th></tr></thead><tbody>
<tr><th scope="row">Character error rate (CER)</th><td>${beforeAfter(row.cer_before, row.cer_after)}</td></tr>
<tr><th scope="row">Word error rate (WER)</th><td>${beforeAfter(row.wer_before, row.wer_after)}</td></tr>
<tr><th scope="row">Lines trained on</th><td>${row.lines_train}</td></tr>
<tr><th scope="row">Training time</th><td>${row.training_minutes === null ? '—' : `${row.training_minutes.toFixed(1)} min`}</td></tr>
</tbody></table>`
      : '';
    const action = live
      ? html`<form method="post" action="/portal/models/${row.model_id}/retire" data-confirm="Cancel this training? Nothing of it is kept.">${csrfField(session.csrfToken)}<button type="submit" class="danger">Cancel the training</button></form>`
      : row.state === 'ready'
        ? html`<form method="post" action="/portal/models/${row.model_id}/retire" data-confirm="Retire this model? New jobs can no longer read with it.">${csrfField(session.csrfToken)}<button type="submit" class="danger">Retire the model</button></form>`
        : '';
    const defaultLine =
      row.state !== 'ready'
        ? ''
        : isDefault
          ? html`<p>New jobs that name no model are read with this model. ${chooseForm(session, `/portal/models/${row.model_id}`, DEFAULT_MODEL, `Use the ${STANDARD.toLowerCase()} again`, `Read new jobs with the ${STANDARD.toLowerCase()} again?`)}</p>`
          : html`<p>${chooseForm(session, `/portal/models/${row.model_id}`, row.model_id, 'Use for new jobs by default', 'Read new jobs that name no model with this model?')}</p>`;
    pc.render(
      ctx,
      modelName(row),
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<div data-live-model><dl><dt>State</dt><dd class="state-${row.state}">${row.state}${row.not_better ? html` <span class="not-better">not better than its base</span>` : ''}${isDefault ? html` <span class="badge">default</span>` : ''}</dd>
<dt>Model id</dt><dd><code>${row.model_id}</code></dd><dt>Trained from</dt><dd>${baseName(row, byId)}</dd>
<dt>Ground truth</dt><dd>${row.lines_total} lines on ${row.pages_total} page${row.pages_total === 1 ? '' : 's'}${skippedTotal ? html`; ${skippedTotal} line${skippedTotal === 1 ? '' : 's'} left out` : ''}</dd>
<dt>Created</dt><dd>${time(row.created_at)}</dd><dt>Started</dt><dd>${time(row.started_at)}</dd><dt>Finished</dt><dd>${time(row.finished_at)}</dd></dl>
${row.error_message ? notice('error', `The training failed: ${row.error_message}`) : ''}
${skipped.length ? html`<h2>Lines left out</h2><ul class="skipped">${skipped.map(([count, words]) => html`<li>${count} ${words}</li>`)}</ul>` : ''}
${row.warnings.length ? html`<h2>Warnings</h2><ul class="warnings">${row.warnings.map((warning) => html`<li>${warning}</li>`)}</ul>` : ''}
<h2>Progress</h2>${progress}
${figures}
${defaultLine}${action}</div>
${row.state === 'ready' ? html`<p class="muted">To read a job with this model without making it the default, give its id as <code>model</code> (API) or <code>--model</code> (<code>hwr submit</code>).</p>` : ''}
<p><a href="/portal/models">All models</a></p>`,
      session,
      'models',
      flash.status,
    );
  });

  router.post('/portal/models/:modelId/retire', async (ctx) => {
    const session = await pc.requireSession(ctx);
    await pc.signedInForm(ctx, session);
    const row = await ownModel(ctx, session.accountId);
    const page = `/portal/models/${row.model_id}`;
    let after: ModelRow;
    try {
      after = await cancelOrRetireModel(runtime, session.accountId, row.model_id, metadata(ctx, session));
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
      return pc.redirectWithFlash(ctx, page, { notice: { kind: 'error', text: error.message }, status: error.status });
    }
    const text = after.state === 'retired' ? 'The model is retired: new jobs can no longer read with it.' : 'The training is cancelled.';
    await pc.redirectWithFlash(ctx, page, { notice: { kind: 'ok', text } });
  });
}

/** Where the default-model form goes back to: a model's page, else the models list. */
function safeBack(raw: string | null): string {
  return raw && /^\/portal\/models\/[0-9a-f-]{36}$/.test(raw) ? raw : '/portal/models';
}
