// Correcting a page in the portal (docs/portal.md, "The page viewer"; docs/corrections.md): the
// line editor's save, a signed-in POST with the session's CSRF token that goes through the same
// use case as PUT /v1/process-scan/{id}/pages/{n}/text (the actor: the signed-in user), answered
// as JSON for the editor's script (Accept: application/json) or with a redirect back to the page;
// and a page's downloads (its text, PageXML and ALTO as the archive has them, with the corrections).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { CodedError } from '../../domain/errors.ts';
import { Rejection } from '../../domain/rejections.ts';
import { readPageCorrections } from '../../projections/corrections.ts';
import { pageFileNames } from '../export/archive-layout.ts';
import { renderAlto } from '../export/alto.ts';
import { applyCorrections } from '../export/export-page.ts';
import { renderPageXml } from '../export/pagexml.ts';
import { renderPlainText } from '../export/plain-text.ts';
import { correctPageText, doneJobOf, storedPageOf } from '../use-cases/corrections.ts';
import { PortalHttpError } from './errors.ts';
import type { PortalContext } from './portal-context.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The formats a page downloads in, by the path's last segment. */
const DOWNLOADS = {
  'page.txt': { file: 'text', type: 'text/plain; charset=utf-8' },
  'pagexml.xml': { file: 'page', type: 'application/vnd.prima.page+xml; charset=utf-8' },
  'alto.xml': { file: 'alto', type: 'application/alto+xml; charset=utf-8' },
} as const;
export type DownloadName = keyof typeof DOWNLOADS;
export const DOWNLOAD_NAMES = Object.keys(DOWNLOADS) as DownloadName[];

const jobIdOf = (ctx: Context): string | null => {
  const raw = String(ctx.params.jobId);
  return UUID.test(raw) ? raw.toLowerCase() : null;
};
const pageOf = (ctx: Context): number => {
  const raw = String(ctx.params.page);
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) throw new PortalHttpError('not_found', 'The job has no such page.');
  return Number(raw);
};
const wantsJson = (ctx: Context): boolean => ctx.accepts('html', 'json') === 'json';

/** A use case's refusal as the portal says it: 404 for another account's job as for none. */
function refusalOf(error: unknown): { status: number; code: string; message: string } | null {
  if (error instanceof Rejection && error.code === 'job_expired')
    return { status: 410, code: 'result_expired', message: 'The result has expired: it can no longer be corrected.' };
  if (error instanceof CodedError && typeof error.status === 'number' && error.status < 500)
    return { status: error.status, code: error.code, message: error.message };
  return null;
}

export function registerCorrectionPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;

  router.post('/portal/jobs/:jobId/pages/:page/text', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const form = await pc.signedInForm(ctx, session);
    const jobId = jobIdOf(ctx);
    const page = pageOf(ctx);
    const ids = form.getAll('line');
    const texts = form.getAll('text');
    const viewer = `/portal/jobs/${jobId}/pages/${page}`;
    const answer = async (status: number, body: object, text: string) => {
      if (wantsJson(ctx)) {
        ctx.status = status;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = body;
        return;
      }
      await pc.redirectWithFlash(ctx, viewer, {
        notice: { kind: status === 200 ? 'ok' : 'error', text },
        status: status === 200 ? undefined : status,
      });
    };
    if (ids.length === 0 || ids.length !== texts.length)
      return answer(
        400,
        { error: { code: 'invalid_correction_body', message: 'Send each line as `line` and its `text`.' } },
        'Nothing to save.',
      );
    try {
      const view = await correctPageText(
        runtime,
        { accountId: session.accountId, keyId: '', actor: `user:${session.userId}` },
        jobId,
        page,
        { lines: ids.map((id, index) => ({ id, text: texts[index] })), requestId: ctx.state.requestId as string | undefined },
      );
      const saved = new Set(ids);
      const lines = view.lines
        .filter((line) => saved.has(line.id))
        .map(({ id, text, machine_text, corrected_text }) => ({ id, text, machine_text, corrected_text }));
      return answer(
        200,
        { version: view.version, corrected_lines: view.corrected_lines, lines },
        `Saved: ${lines.length} line${lines.length === 1 ? '' : 's'}.`,
      );
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      // Another account's job, or none: the portal's own 404 page, as for the viewer.
      if (refusal.code === 'job_not_found' && !wantsJson(ctx)) throw new PortalHttpError('not_found', 'There is no such job.');
      return answer(refusal.status, { error: { code: refusal.code, message: refusal.message } }, `Not saved: ${refusal.message}`);
    }
  });

  router.get('/portal/jobs/:jobId/pages/:page/download/:format', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const format = String(ctx.params.format);
    if (!Object.hasOwn(DOWNLOADS, format)) throw new PortalHttpError('not_found', 'No such download.');
    const download = DOWNLOADS[format as DownloadName];
    const page = pageOf(ctx);
    let body: string;
    let fileName: string;
    try {
      const job = await doneJobOf(runtime.db.pool, session.accountId, jobIdOf(ctx));
      const stored = await storedPageOf(runtime, job, page);
      const corrections = await readPageCorrections(runtime.db.pool, job.job_id, page);
      const corrected = applyCorrections(stored.export, Object.fromEntries(corrections.lines));
      const options = { timestamp: job.created_at };
      body =
        download.file === 'text'
          ? renderPlainText(corrected)
          : download.file === 'page'
            ? renderPageXml(corrected, options)
            : renderAlto(corrected, options);
      fileName = pageFileNames(page, job.page_count, stored.name)[download.file].split('/').pop() ?? format;
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      if (refusal.status === 404) throw new PortalHttpError('not_found', 'The job has no such page.');
      if (refusal.status === 410) throw new PortalHttpError('result_expired', refusal.message);
      throw new PortalHttpError('result_not_ready', refusal.message);
    }
    ctx.type = download.type;
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Disposition', `attachment; filename="${fileName.replace(/[^\w.-]/g, '_')}"`);
    ctx.body = body;
  });
}
