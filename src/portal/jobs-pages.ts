// Jobs: the account's jobs, newest first, paged; a job's status, timeline (the raw events behind a
// toggle), download and "Train on these pages" (job-history.ts).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { jobStreamId } from '../../domain/events.ts';
import { readJobStatus } from '../../projections/job-status.ts';
import { BlobNotFoundError } from '../blobs/blob-store.ts';
import { readStream } from '../store/read-stream.ts';
import { Rejection } from '../../domain/rejections.ts';
import { BIDI_CONTROL_CLASS, showBidiControls } from '../shared/bidi-controls.ts';
import { csrfField, html, notice, time, uploadedName } from './html.ts';
import type { PortalContext } from './portal-context.ts';
import { listAccountJobs, readJobPages } from '../../projections/job-status.ts';
import { PortalHttpError } from './errors.ts';
import { timelineSection, trainSection } from './job-history.ts';
import { portalIiifManifestUrl } from '../use-cases/iiif.ts';

export const JOBS_PER_PAGE = 25;

const BIDI_CONTROL = new RegExp(`[${BIDI_CONTROL_CLASS}]`, 'g');
const jsonWithoutBidiControls = (data: unknown): string =>
  JSON.stringify(data, null, 1).replace(BIDI_CONTROL, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function registerJobPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;

  router.get('/portal/jobs', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const pageNumber = Math.max(1, Math.min(10_000, Number.parseInt(String(ctx.query.page ?? '1'), 10) || 1));
    const listed = await listAccountJobs(runtime.db.pool, session.accountId, JOBS_PER_PAGE + 1, (pageNumber - 1) * JOBS_PER_PAGE);
    const more = listed.length > JOBS_PER_PAGE;
    const rows = listed.slice(0, JOBS_PER_PAGE).map(
      (
        job,
      ) => html`<tr><td><a href="/portal/jobs/${job.job_id}"><code>${job.job_id}</code></a>${job.first_page ? html`<br><span class="muted">${uploadedName(job.first_page)}${job.page_count > 1 ? ` and ${job.page_count - 1} more` : ''}</span>` : ''}</td><td class="state-${job.state}">${job.state}</td>
<td>${job.pages_done} / ${job.page_count}</td><td>${job.current_step ?? '—'}</td><td>${time(job.created_at)}</td><td>${time(job.finished_at)}</td></tr>`,
    );
    pc.render(
      ctx,
      'Jobs',
      html`<p><a href="/portal/jobs/new">New job</a></p><table data-live><thead><tr><th scope="col">Job</th><th scope="col">State</th><th scope="col">Pages done</th><th scope="col">Step</th><th scope="col">Submitted</th><th scope="col">Finished</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="6">No jobs${pageNumber > 1 ? ' on this page' : ' yet: submit one with an API key'}.</td></tr>`}</tbody></table>
<nav class="pager" aria-label="Pages">${pageNumber > 1 ? html`<a href="/portal/jobs?page=${pageNumber - 1}">Newer</a>` : ''}${more ? html`<a href="/portal/jobs?page=${pageNumber + 1}">Older</a>` : ''}</nav>`,
      session,
      'jobs',
    );
  });

  async function ownJob(ctx: Context, accountId: string) {
    const jobId = String(ctx.params.jobId);
    const job = UUID.test(jobId) ? await readJobStatus(runtime.db.pool, jobId.toLowerCase(), accountId) : undefined;
    // Another account's job does not exist for this user.
    if (!job) throw new PortalHttpError('not_found', 'There is no such job.');
    return job;
  }

  router.get('/portal/jobs/:jobId', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const job = await ownJob(ctx, session.accountId);
    const events = await readStream(runtime.db.pool, jobStreamId(job.job_id));
    const pages = await readJobPages(runtime.db.pool, job.job_id);
    const thumbnails = pages.map(
      (
        p,
      ) => html`<li><a href="/portal/jobs/${job.job_id}/pages/${p.page_number}"><img src="/portal/jobs/${job.job_id}/pages/${p.page_number}/image?w=160" alt="" width="160" loading="lazy">
<span>${p.page_number}. ${uploadedName(p.name)}</span><span class="muted">${p.completed ? `${p.line_count ?? 0} lines` : 'not done'}</span></a></li>`,
    );
    const downloadable = job.state === 'done' && !job.result_expired && job.archive_key && Date.now() < job.expires_at.getTime();
    const timeline = events.map(
      (event) =>
        // Page names in the data: bidirectional controls as JSON escapes (\u202e), never raw.
        html`<tr><td>${event.streamVersion}</td><td>${time(event.recordedAt)}</td><td>${event.type}</td><td><pre>${jsonWithoutBidiControls(event.data)}</pre></td><td>${event.metadata.actor ?? ''}</td></tr>`,
    );
    const iiif = downloadable ? await iiifSection(job.job_id, session.accountId, events) : '';
    const flash = await pc.takeFlash(ctx);
    const history = await timelineSection(pc, session.accountId, job);
    const training = await trainSection(pc, session, job, pages);
    pc.render(
      ctx,
      `Job ${job.job_id}`,
      html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<div data-live-job><dl><dt>State</dt><dd class="state-${job.state}">${job.state}</dd>
<dt>Pages done</dt><dd>${job.pages_done} / ${job.page_count}</dd><dt>Step</dt><dd>${job.current_step ?? '—'}</dd>
<dt>Submitted</dt><dd>${time(job.created_at)}</dd><dt>Finished</dt><dd>${time(job.finished_at)}</dd>${job.state === 'failed' || job.state === 'cancelled' ? '' : html`<dt>Result kept until</dt><dd>${time(job.expires_at)}</dd>`}</dl>
${job.error_message ? notice('error', showBidiControls(job.error_message)) : ''}${job.warning_message ? notice('warn', showBidiControls(job.warning_message)) : ''}
${job.state === 'queued' || job.state === 'processing' ? html`<form method="post" action="/portal/jobs/${job.job_id}/cancel" data-confirm="Cancel this job? Its pages stop being processed.">${csrfField(session.csrfToken)}<button type="submit" class="danger">Cancel the job</button></form>` : ''}
${downloadable ? html`<p><a href="/portal/jobs/${job.job_id}/result" download>Download the result (ZIP)</a></p>` : ''}${iiif}
<h2>Pages</h2><ul class="thumbs">${thumbnails}</ul>
${history}
<details class="raw-events"><summary>Raw events (JSON, for auditors)</summary>
<table><caption>Event timeline</caption><thead><tr><th scope="col">#</th><th scope="col">Recorded</th><th scope="col">Event</th><th scope="col">Data</th><th scope="col">Actor</th></tr></thead><tbody>${timeline}</tbody></table></details>
</div>${training}<p><a href="/portal/jobs">All jobs</a></p>`,
      session,
      'jobs',
      flash.status ?? 200,
    );
  });

  /**
   * A done job's IIIF manifest (docs/iiif.md, "From the portal"): its signed URL to open or copy
   * into a IIIF viewer, signed with an active key of the account (the submitting key first).
   */
  async function iiifSection(jobId: string, accountId: string, events: Awaited<ReturnType<typeof readStream>>) {
    const queued = events.find((event) => event.type === 'JobQueued')?.data as { keyId?: string | null } | undefined;
    const signed = await portalIiifManifestUrl(runtime.db.pool, runtime.config.baseUrl, {
      jobId,
      accountId,
      submittedBy: queued?.keyId ?? null,
    });
    if (!signed)
      return html`<section class="iiif" aria-labelledby="iiif-heading"><h2 id="iiif-heading">IIIF manifest</h2><p class="muted">A IIIF manifest of this job is signed with an API key of the account, and it has none that is active: <a href="/portal/settings/keys">create one</a>.</p></section>`;
    return html`<section class="iiif" aria-labelledby="iiif-heading"><h2 id="iiif-heading">IIIF manifest</h2>
<p>For Mirador, Universal Viewer or any IIIF viewer: the pages, their lines and words as annotations, and search. <a href="${signed.url}" target="_blank" rel="noopener noreferrer" data-iiif-manifest>Open the manifest</a> <button type="button" class="quiet" data-copy="iiif-manifest-url" hidden>Copy the address</button></p>
<p class="secret" id="iiif-manifest-url">${signed.url}</p>
<p class="muted">Signed with the API key <q>${signed.keyLabel}</q> (<code>${signed.keyPrefix}…</code>); it works until ${time(signed.expiresAt)} for anyone who has it, and ends at once if that key is revoked. Reload this page for a fresh one.</p></section>`;
  }

  router.post('/portal/jobs/:jobId/cancel', async (ctx) => {
    const session = await pc.requireSession(ctx);
    await pc.signedInForm(ctx, session);
    const job = await ownJob(ctx, session.accountId);
    try {
      await runtime.bus.job(
        job.job_id,
        { type: 'CancelJob', now: new Date() },
        { actor: `user:${session.userId}`, requestId: ctx.state.requestId },
      );
    } catch (error) {
      if (error instanceof Rejection) throw new PortalHttpError('job_not_cancellable', `The job cannot be cancelled: ${error.message}`);
      throw error;
    }
    ctx.status = 303;
    ctx.set('Location', `/portal/jobs/${job.job_id}`);
    ctx.body = '';
  });

  router.get('/portal/jobs/:jobId/result', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const job = await ownJob(ctx, session.accountId);
    if (job.state !== 'done') throw new PortalHttpError('result_not_ready', `The job is ${job.state}; its result exists once it is done.`);
    if (job.result_expired || Date.now() >= job.expires_at.getTime() || !job.archive_key)
      throw new PortalHttpError('result_expired', 'The result has expired.');
    const { blobs } = runtime;
    if (runtime.config.results.redirect && blobs.presignedGetUrl) {
      const ttl = Math.max(1, Math.min(runtime.config.results.urlTtlSeconds, Math.floor((job.expires_at.getTime() - Date.now()) / 1000)));
      ctx.status = 302;
      ctx.set(
        'Location',
        await blobs.presignedGetUrl(job.archive_key, {
          expiresInSeconds: ttl,
          filename: `${job.job_id}.zip`,
          contentType: 'application/zip',
        }),
      );
      ctx.set('Cache-Control', 'no-store');
      ctx.body = '';
      return;
    }
    try {
      const stream = await blobs.stream(job.archive_key);
      ctx.status = 200;
      ctx.type = 'application/zip';
      ctx.set('Content-Disposition', `attachment; filename="${job.job_id}.zip"`);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = stream;
    } catch (error) {
      if (error instanceof BlobNotFoundError) throw new PortalHttpError('result_expired', 'The result is no longer stored.');
      throw error;
    }
  });
}
