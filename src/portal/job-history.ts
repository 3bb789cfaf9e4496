// The job page's parts for customers (docs/portal.md, "Jobs"), issue 42: the timeline in their
// words (the timeline use case: who by API key label or user e-mail, never an id; a correction's
// lines before and after), and "Train on these pages" (the corrected pages chosen, pages marked
// checked), whose POST starts a training through the train-from-job use case and goes on to the
// model's page.
import type Router from '@koa/router';
import { CodedError } from '../../domain/errors.ts';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import { readCorrectedPages } from '../../projections/corrections.ts';
import type { JobPageRow, JobStatusRow } from '../../projections/job-status.ts';
import { checkLabel } from '../use-cases/models.ts';
import { jobTimeline, type TimelineActor } from '../use-cases/timeline.ts';
import { queueTrainingFromJob } from '../use-cases/train-from-job.ts';
import { csrfField, type Html, html, time, uploadedName } from './html.ts';
import { PortalHttpError } from './errors.ts';
import type { PortalContext } from './portal-context.ts';
import type { Session } from './sessions.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const actorText = (actor: TimelineActor): Html =>
  actor.kind === 'user'
    ? html`by <bdi>${actor.email}</bdi>`
    : actor.kind === 'api_key'
      ? html`by the API key <bdi>${actor.label}</bdi>`
      : html`by the service`;

/** The job's history for people, oldest first. */
export async function timelineSection(pc: PortalContext, accountId: string, job: JobStatusRow): Promise<Html> {
  const entries = await jobTimeline(pc.runtime.db.pool, accountId, job.job_id);
  const items = entries.map(
    (entry) =>
      html`<li class="${`event-${entry.type}`}"><span class="when">${time(entry.at)}</span> <span class="what">${entry.page ? html`<a href="/portal/jobs/${job.job_id}/pages/${entry.page}">${entry.summary}</a>` : entry.summary}</span> <span class="who">${actorText(entry.actor)}</span>${
        entry.lines?.length
          ? html`<ul class="changes">${entry.lines.map(
              (line) => html`<li><del><bdi>${line.before}</bdi></del> → <ins><bdi>${line.after}</bdi></ins></li>`,
            )}</ul>`
          : ''
      }</li>`,
  );
  return html`<h2>Timeline</h2><ol class="history">${items}</ol>`;
}

/** "Train on these pages": for a done job of an account whose service trains. */
export async function trainSection(pc: PortalContext, session: Session, job: JobStatusRow, pages: JobPageRow[]): Promise<Html> {
  if (job.state !== 'done' || job.result_expired || Date.now() >= job.expires_at.getTime()) return html``;
  if (!(await pc.runtime.trainer()).available) return html``;
  const corrected = await readCorrectedPages(pc.runtime.db.pool, job.job_id);
  const rows = pages.map(
    (page) =>
      html`<tr><td><a href="/portal/jobs/${job.job_id}/pages/${page.page_number}">${page.page_number}. ${uploadedName(page.name)}</a></td><td>${corrected.has(page.page_number) ? 'corrected' : '—'}</td>
<td><label class="check"><input type="checkbox" name="pages" value="${page.page_number}"${corrected.has(page.page_number) ? html` checked` : ''}> <span>Train on page ${page.page_number}</span></label></td>
<td><label class="check"><input type="checkbox" name="checked_pages" value="${page.page_number}"> <span>Page ${page.page_number} is checked</span></label></td></tr>`,
  );
  return html`<h2>Train on these pages</h2>
<p>A model learns this hand from the lines people corrected. Lines nobody changed count only on a page marked <em>checked</em> (read through and right as the machine read it).</p>
<form method="post" action="/portal/jobs/${job.job_id}/train" class="train-from-job">${csrfField(session.csrfToken)}
<table><thead><tr><th scope="col">Page</th><th scope="col">Corrections</th><th scope="col">Train on it</th><th scope="col">Checked</th></tr></thead><tbody>${rows}</tbody></table>
<p><label>Name of the model (optional) <input type="text" name="label" maxlength="100"></label></p>
<button type="submit">Start the training</button></form>`;
}

export function registerJobTraining(router: Router, pc: PortalContext): void {
  router.post('/portal/jobs/:jobId/train', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    const raw = String(ctx.params.jobId);
    const jobId = UUID.test(raw) ? raw.toLowerCase() : null;
    const back = `/portal/jobs/${jobId ?? ''}`;
    const numbers = (name: string) =>
      form
        .getAll(name)
        .map(Number)
        .filter((n) => Number.isSafeInteger(n) && n >= 1);
    const checked = numbers('checked_pages');
    const chosen = [...new Set([...numbers('pages'), ...checked])].sort((a, b) => a - b);
    if (chosen.length === 0)
      return pc.redirectWithFlash(ctx, back, { notice: { kind: 'error', text: 'Choose at least one page to train on.' }, status: 400 });
    try {
      const model = await queueTrainingFromJob(pc.runtime, {
        accountId: session.accountId,
        keyId: null,
        actor: `user:${session.userId}`,
        jobId,
        pages: chosen,
        checkedPages: checked,
        label: checkLabel(form.get('label')),
        baseModel: DEFAULT_MODEL,
        requestId: ctx.state.requestId as string | undefined,
      });
      await pc.redirectWithFlash(ctx, `/portal/models/${model.model_id}`, {
        notice: {
          kind: 'ok',
          text: `Your ground truth is in: ${model.lines_total} lines on ${model.pages_total} page${model.pages_total === 1 ? '' : 's'}. The training is queued.`,
        },
      });
    } catch (error) {
      if (!(error instanceof CodedError) || typeof error.status !== 'number' || error.status === 500) throw error;
      // Another account's job, or none: nothing happened, the portal's 404 at once.
      if (error.code === 'job_not_found') throw new PortalHttpError('not_found', 'There is no such job.');
      await pc.redirectWithFlash(ctx, back, {
        notice: { kind: 'error', text: `No training started: ${error.message}` },
        status: error.status,
      });
    }
  });
}
