// The page viewer: the page image (scaled by sharp, cached) with its region and line polygons
// drawn over it as SVG, the text beside it line by line. Works without script: each line's text
// links to its polygon and each polygon to its text (`:target` highlights both sides); the
// script (static/portal.js) adds highlighting on hover and focus. Low-confidence words are
// marked; corrected lines show the recognised reading.
import { readJobPages } from '../../projections/job-status.ts';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { readJobStatus } from '../../projections/job-status.ts';
import { BlobNotFoundError } from '../blobs/blob-store.ts';
import { LruCache } from '../shared/lru-cache.ts';
import { isJpeg2000 } from '../recognition/image/jpeg2000-header.ts';
import { openImage } from '../recognition/image/open-image.ts';
import type { PageResult, Point } from '../recognition/page/page-result.ts';
import { showBidiControls } from '../shared/bidi-controls.ts';
import { html, type Html, markedText, notice, uploadedName } from './html.ts';
import { highlightText, searchMatcher, searchParamsOf, SearchRequestError } from '../use-cases/search.ts';
import { DOWNLOAD_NAMES } from './correction-pages.ts';
import { prepareExportPage } from '../export/export-page.ts';
import { readPageCorrections } from '../../projections/corrections.ts';
import type { PortalContext } from './portal-context.ts';
import { PortalHttpError } from './errors.ts';

/** Words below this confidence are marked in the text. */
export const LOW_CONFIDENCE = 0.5;
/** Widths an image is served at (thumbnail, viewer); anything else is refused. */
export const IMAGE_WIDTHS = [160, 1200, 2400] as const;
const IMAGES_KEPT = 64;

/**
 * A JPEG 2000 page is decoded whole (about 25 bytes a pixel) for any width, outside the workers'
 * pixel budget: the viewer decodes one at a time, so a page of thumbnails cannot decode dozens at once.
 */
let jpeg2000Queue: Promise<unknown> = Promise.resolve();
function oneJpeg2000AtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = jpeg2000Queue.then(work, work);
  jpeg2000Queue = run.catch(() => {});
  return run;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What the page was opened for from the search (`?line=<line id>&q=…&fuzzy=…`): the line to select,
 * and the words to mark (as the search's hits mark them). A query the search would refuse marks nothing.
 */
function searchContextOf(query: Context['query']): {
  line: string | null;
  q: string | null;
  fuzzy: number;
  matches: ((word: string) => boolean) | null;
} {
  const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
  const line = one(query.line);
  const context = { line: line && line.length <= 200 ? line : null, q: null, fuzzy: 0, matches: null };
  if (!one(query.q)) return context;
  try {
    const params = searchParamsOf({ q: one(query.q), fuzzy: one(query.fuzzy) });
    return { ...context, q: params.q, fuzzy: params.fuzzy, matches: searchMatcher(params.q, params.fuzzy) };
  } catch (error) {
    if (error instanceof SearchRequestError) return context;
    throw error;
  }
}

const points = (polygon: readonly Point[]): string => polygon.map(([x, y]) => `${Math.round(x)},${Math.round(y)}`).join(' ');

export function registerViewerPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;
  const images = new LruCache<string, Buffer>(IMAGES_KEPT);

  async function ownPage(ctx: Context, accountId: string) {
    const jobId = String(ctx.params.jobId);
    const job = UUID.test(jobId) ? await readJobStatus(runtime.db.pool, jobId.toLowerCase(), accountId) : undefined;
    if (!job) throw new PortalHttpError('not_found', 'There is no such job.');
    const number = Number(ctx.params.page);
    const page = Number.isInteger(number)
      ? (await readJobPages(pc.runtime.db.pool, job.job_id)).find((row) => row.page_number === number)
      : undefined;
    if (!page) throw new PortalHttpError('not_found', 'The job has no such page.');
    return { job, page };
  }

  router.get('/portal/jobs/:jobId/pages/:page/image', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const { job, page } = await ownPage(ctx, session.accountId);
    const width = Number(ctx.query.w ?? IMAGE_WIDTHS[1]);
    if (!(IMAGE_WIDTHS as readonly number[]).includes(width))
      throw new PortalHttpError('invalid_image_width', `Images are served ${IMAGE_WIDTHS.join(' or ')} pixels wide.`);
    const etag = `"${page.sha256.slice(0, 32)}-${width}"`;
    ctx.set('ETag', etag);
    // The page image of a job never changes; it is the user's, so private to the browser.
    ctx.set('Cache-Control', 'private, max-age=86400');
    if (ctx.get('If-None-Match') === etag) {
      ctx.status = 304;
      return;
    }
    const cacheKey = `${job.job_id}/${page.page_number}/${width}`;
    let body = images.get(cacheKey);
    if (!body) {
      let source: Buffer;
      try {
        source = await runtime.blobs.get(page.blob_key);
      } catch (error) {
        if (error instanceof BlobNotFoundError) throw new PortalHttpError('result_expired', 'The page image is no longer stored.');
        throw error;
      }
      const scaled = async () =>
        // rotate(): EXIF orientation applied, as recognition saw the page.
        (await openImage(source, { page: 0, limitInputPixels: runtime.config.limits.maxImagePixels }))
          .rotate()
          .resize({ width, withoutEnlargement: true })
          .jpeg({ quality: 80 })
          .toBuffer();
      try {
        body = isJpeg2000(source) ? await oneJpeg2000AtATime(scaled) : await scaled();
      } catch (error) {
        // A thread out of memory is the server's trouble, not the image's.
        if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') throw error;
        // The page that failed its job for being unreadable is no more readable here: say so, not 500.
        throw new PortalHttpError('page_image_unreadable', `The page image cannot be shown: ${(error as Error).message.split('\n')[0]}`);
      }
      images.set(cacheKey, body);
    }
    ctx.type = 'image/jpeg';
    ctx.body = body;
  });

  router.get('/portal/jobs/:jobId/pages/:page', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const { job, page } = await ownPage(ctx, session.accountId);
    const base = `/portal/jobs/${job.job_id}/pages/${page.page_number}`;
    // The uploaded name: isolated in the heading, its bidirectional controls visible in both.
    const title = `Page ${page.page_number}: ${showBidiControls(page.name)}`;
    const heading = html`Page ${page.page_number}: ${uploadedName(page.name)}`;
    let result: PageResult | null = null;
    if (page.result_key) {
      try {
        result = JSON.parse((await runtime.blobs.get(page.result_key)).toString('utf8')) as PageResult;
      } catch (error) {
        if (!(error instanceof BlobNotFoundError)) throw error;
      }
    }
    const nav = html`<nav class="pager" aria-label="Pages">${page.page_number > 1 ? html`<a href="/portal/jobs/${job.job_id}/pages/${page.page_number - 1}">Previous page</a>` : ''}
<a href="/portal/jobs/${job.job_id}">Back to the job</a>${page.page_number < job.page_count ? html`<a href="/portal/jobs/${job.job_id}/pages/${page.page_number + 1}">Next page</a>` : ''}</nav>`;
    if (!result) {
      pc.render(
        ctx,
        title,
        html`<p>${page.completed ? 'The page result is no longer stored.' : job.state === 'failed' || job.state === 'cancelled' ? `This page was not read: the job ${job.state === 'failed' ? 'failed' : 'was cancelled'} first.` : 'This page is not recognised yet.'}</p>
<img class="page-only" src="${base}/image?w=1200" alt="${`Page ${page.page_number}`}">${nav}`,
        session,
        'jobs',
        200,
        heading,
      );
      return;
    }
    const { width, height } = result.image;
    // Line ids as the archive's PageXML/ALTO and the corrections have them (prepareExportPage keeps
    // the result's order: region by region, line by line). A done job's lines can be corrected.
    const exported = prepareExportPage(result);
    const editable = job.state === 'done' && !job.result_expired && Date.now() < job.expires_at.getTime();
    const corrections = job.state === 'done' ? await readPageCorrections(runtime.db.pool, job.job_id, page.page_number) : null;
    const flash = await pc.takeFlash(ctx);
    const search = searchContextOf(ctx.query);
    const regions: Html[] = [];
    const hitBoxes: Html[] = [];
    const texts: Html[] = [];
    let lowWords = 0;
    for (const [regionIndex, region] of result.regions.entries()) {
      regions.push(html`<polygon class="region" points="${points(region.polygon)}"></polygon>`);
      for (const [lineIndex, line] of region.lines.entries()) {
        const id = exported.regions[regionIndex]?.lines[lineIndex]?.id ?? line.id;
        const correction = corrections?.lines.get(id);
        const byPerson = correction !== undefined && correction !== line.text;
        const current = correction ?? line.text;
        const number = texts.length + 1;
        const selected = id === search.line ? ' selected' : '';
        const { matches } = search;
        if (matches)
          for (const word of line.words)
            if (matches(word.text))
              hitBoxes.push(
                html`<rect class="hit-word" x="${Math.round(word.box.x)}" y="${Math.round(word.box.y)}" width="${Math.round(word.box.width)}" height="${Math.round(word.box.height)}"></rect>`,
              );
        regions.push(
          html`<a href="#text-${id}" aria-label="${`Line ${number}: ${current}`}"><polygon class="line${byPerson ? ' corrected' : ''}${selected}" id="line-${id}" data-line="${id}" points="${points(line.polygon)}"></polygon></a>`,
        );
        lowWords += line.words.filter((word) => word.confidence < LOW_CONFIDENCE).length;
        const words = line.words.length
          ? line.words.map(
              (word, index) =>
                html`${index > 0 ? ' ' : ''}${matches?.(word.text) ? html`<mark class="hit"${word.confidence < LOW_CONFIDENCE ? html` title="${`confidence ${word.confidence.toFixed(2)}`}"` : ''}>${word.text}</mark>` : word.confidence < LOW_CONFIDENCE ? html`<mark class="low" title="${`confidence ${word.confidence.toFixed(2)}`}">${word.text}</mark>` : word.text}`,
            )
          : [html`${line.text}`];
        // The words are the recognised reading; a line the corrector changed shows its text and the
        // recognised reading under it; a line a person corrected, the correction and the machine's reading.
        const recognised = line.recognizedText !== undefined && line.recognizedText !== line.text;
        texts.push(
          html`<li id="text-${id}" data-line="${id}" data-text="${current}"${byPerson || selected ? html` class="${`${byPerson ? 'corrected' : ''}${selected}`.trim()}"` : ''}><a class="line-text" href="#line-${id}">${byPerson || recognised ? (matches ? markedText(highlightText(current, matches)) : current) : words}</a>${byPerson ? html`<span class="was"><span class="badge">corrected</span> machine reading: ${line.text}</span>` : recognised ? html`<span class="was">recognised: ${line.recognizedText}</span>` : ''}<span class="conf">${Math.round(line.confidence * 100)} %</span></li>`,
        );
      }
    }
    const downloads = editable
      ? html`<p class="downloads">This page: ${DOWNLOAD_NAMES.map((name, index) => html`${index > 0 ? ' · ' : ''}<a href="${base}/download/${name}" download>${name === 'page.txt' ? 'text' : name === 'pagexml.xml' ? 'PageXML' : 'ALTO'}</a>`)}</p>`
      : '';
    const editorHelp = editable
      ? html`<p class="muted editor-help" hidden>Click a line or press Enter on it to correct its text; Enter saves and goes to the next line, Esc cancels; ↑ and ↓ move between lines.</p>`
      : '';
    const searchNote = search.q
      ? html`<p class="search-note">Words matching <q>${search.q}</q> are <mark class="hit">marked</mark> on the image and in the text (${hitBoxes.length} on this page). <a href="${`/portal/search?${new URLSearchParams({ q: search.q, ...(search.fuzzy > 0 ? { fuzzy: String(search.fuzzy) } : {}) })}`}">Back to the results</a></p>`
      : '';
    const body =
      texts.length === 0
        ? html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<p class="notice warn">No text lines were found on this page, so there is nothing to read or correct here.</p>
<img class="page-only" src="${base}/image?w=1200" alt="${`Page ${page.page_number}`}">${nav}`
        : html`${flash.notice ? notice(flash.notice.kind, flash.notice.text) : ''}<p class="muted">${result.regions.length} regions, ${texts.length} lines${result.correction ? html`, corrected by ${result.correction.model}` : ''}${corrections?.lines.size ? html`, ${corrections.lines.size} corrected by people` : ''}. ${lowWords > 0 ? html`Words under ${Math.round(LOW_CONFIDENCE * 100)} % confidence are <mark class="low">marked</mark>.` : ''}</p>${searchNote}${editorHelp}${downloads}
<div class="viewer"><figure data-zoom><svg viewBox="0 0 ${width} ${height}" role="group" aria-label="${`Page ${page.page_number} with its text lines outlined`}">
<image href="${base}/image?w=1200" data-zoom-href="${base}/image?w=2400" aria-hidden="true" x="0" y="0" width="${width}" height="${height}" preserveAspectRatio="none"></image>${regions}${hitBoxes}</svg></figure>
<ol class="lines" aria-label="Text, line by line"${editable ? html` data-editor="${base}/text" data-csrf="${session.csrfToken}"` : ''}>${texts}</ol></div>${nav}`;
    pc.render(ctx, title, body, session, 'jobs', flash.status ?? 200, heading);
  });
}
