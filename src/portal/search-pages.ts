// Search in the portal (docs/search.md, "Portal"): the signed-in user's account's done jobs, through
// the same use case as GET /v1/search (searchAccount). Each hit: the line with the matched words
// marked, a thumbnail of the line cut from the page image, the job and the page; a click opens the
// viewer at the line (`?line=…&q=…`), which marks the matched words on the image and in the text.
import { createHash } from 'node:crypto';
import type Router from '@koa/router';
import { readJobPages } from '../../projections/job-status.ts';
import { Rejection } from '../../domain/rejections.ts';
import { renderIiifImage } from '../export/iiif-image.ts';
import { LruCache } from '../shared/lru-cache.ts';
import { doneJobOf, storedPageOf } from '../use-cases/corrections.ts';
import { CorrectionError } from '../use-cases/errors.ts';
import { pagePixels } from '../use-cases/iiif.ts';
import { type SearchAnswer, type SearchHit, searchAccount, searchParamsOf, SearchRequestError } from '../use-cases/search.ts';
import { html, markedText, notice, uploadedName } from './html.ts';
import type { PortalContext } from './portal-context.ts';
import { PortalHttpError } from './errors.ts';

/** Hits on a page of results. */
export const HITS_PER_PAGE = 20;
/** A line's thumbnail is at most this large (CSS pixels twice over, for sharp screens). */
const THUMB_MAX = { width: 720, height: 120 };
const THUMBS_KEPT = 512;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FUZZY_LABELS = ['As written (accents and case ignored)', 'Close spellings (a typo or two)', 'Looser still'] as const;

/** The viewer at a hit's line, the query carried so that it marks the matched words. */
export function viewerLinkOf(hit: Pick<SearchHit, 'job_id' | 'page' | 'line_id'>, q: string, fuzzy: number): string {
  const query = new URLSearchParams({ line: hit.line_id, q });
  if (fuzzy > 0) query.set('fuzzy', String(fuzzy));
  return `/portal/jobs/${hit.job_id}/pages/${hit.page}?${query}#text-${encodeURIComponent(hit.line_id)}`;
}

/** The results page of `q` (with these settings), from `cursor` on. */
function resultsLink(q: string, fuzzy: number, jobId: string | null, cursor: string | null): string {
  const query = new URLSearchParams({ q });
  if (fuzzy > 0) query.set('fuzzy', String(fuzzy));
  if (jobId) query.set('job', jobId);
  if (cursor) query.set('cursor', cursor);
  return `/portal/search?${query}`;
}

export function registerSearchPages(router: Router, pc: PortalContext): void {
  const { runtime } = pc;
  const thumbs = new LruCache<string, Buffer>(THUMBS_KEPT);

  router.get('/portal/search', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const given = (name: string): string | undefined => {
      const value = ctx.query[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const q = given('q') ?? '';
    const fuzzyText = given('fuzzy') ?? '0';
    const job = given('job') || undefined;
    const form = (fuzzy: string) =>
      html`<form class="search-form" role="search" method="get" action="/portal/search">
<label>Words <input type="search" name="q" value="${q}" maxlength="200" required></label>
<label>Spelling <select name="fuzzy">${FUZZY_LABELS.map((label, level) => html`<option value="${level}"${String(level) === fuzzy ? html` selected` : ''}>${label}</option>`)}</select></label>
${job ? html`<input type="hidden" name="job" value="${job}">` : ''}<button type="submit">Search</button></form>`;
    const help = html`<p class="muted">Finds lines in your done jobs until their results expire: the machine's reading, its alternative readings of a word, and your corrections. <code>"quoted words"</code> a phrase, <code>or</code> between words either, <code>-word</code> not.</p>`;
    if (q.trim() === '') {
      pc.render(ctx, 'Search', html`${form(fuzzyText)}${help}`, session, 'search');
      return;
    }
    let answer: SearchAnswer;
    let params: ReturnType<typeof searchParamsOf>;
    try {
      params = searchParamsOf({ q, fuzzy: fuzzyText, job_id: job, limit: String(HITS_PER_PAGE), cursor: given('cursor') });
      answer = await searchAccount(runtime.db, session.accountId, params);
    } catch (error) {
      if (!(error instanceof SearchRequestError)) throw error;
      pc.render(
        ctx,
        'Search',
        html`${form(fuzzyText)}${notice('error', `This search cannot be made: ${error.message}`)}${help}`,
        session,
        'search',
        400,
      );
      return;
    }
    const names = new Map<string, Map<number, string>>();
    for (const jobId of new Set(answer.hits.map((hit) => hit.job_id)))
      names.set(jobId, new Map((await readJobPages(runtime.db.pool, jobId)).map((row) => [row.page_number, row.name])));
    const hits = answer.hits.map((hit) => {
      const name = names.get(hit.job_id)?.get(hit.page);
      const found = hit.word?.alternative
        ? html` · found through <q>${hit.word.alternative.text}</q>, an alternative reading of <q>${hit.word.text}</q>`
        : '';
      return html`<li><a class="hit" href="${viewerLinkOf(hit, params.q, params.fuzzy)}"><img src="/portal/jobs/${hit.job_id}/pages/${hit.page}/lines/${encodeURIComponent(hit.line_id)}/image" alt="" loading="lazy"><span class="snippet">${markedText(hit.highlight)}</span></a>
<span class="muted">Job <code>${hit.job_id.slice(0, 8)}</code> · page ${hit.page}${name ? html` (${uploadedName(name)})` : ''}${hit.corrected ? ' · corrected' : ''}${hit.word ? ` · word confidence ${Math.round(hit.word.confidence * 100)} %` : ''}${found}</span></li>`;
    });
    const first = params.cursor ? html`<a href="${resultsLink(params.q, params.fuzzy, params.jobId, null)}">First results</a>` : '';
    const more = answer.next_cursor
      ? html`<a href="${resultsLink(params.q, params.fuzzy, params.jobId, answer.next_cursor)}">More results</a>`
      : '';
    pc.render(
      ctx,
      `Search: ${params.q}`,
      html`${form(String(params.fuzzy))}${params.jobId ? html`<p>In job <a href="/portal/jobs/${params.jobId}"><code>${params.jobId}</code></a> only (<a href="${resultsLink(params.q, params.fuzzy, null, null)}">search every job</a>).</p>` : ''}
<p class="muted" role="status">${hits.length === 0 ? (params.cursor ? 'No more lines found.' : 'No line found.') : `${hits.length} line${hits.length === 1 ? '' : 's'} found${answer.next_cursor ? ', more on the next page' : ''}, best first.`}${hits.length === 0 && params.fuzzy === 0 ? ' Try close spellings.' : ''}</p>
${hits.length ? html`<ol class="hits" aria-label="Lines found">${hits}</ol>` : help}
<nav class="pager" aria-label="Results">${first}${more}</nav>`,
      session,
      'search',
      200,
      html`Search: <q>${params.q}</q>`,
    );
  });

  // A line's region of its page image, a little around it, for the results: session-authenticated,
  // the account's done jobs only, cut by the Image API's code from the page pixels it caches.
  router.get('/portal/jobs/:jobId/pages/:page/lines/:lineId/image', async (ctx) => {
    const session = await pc.requireSession(ctx);
    const jobId = String(ctx.params.jobId).toLowerCase();
    const pageNumber = Number(ctx.params.page);
    const lineId = String(ctx.params.lineId);
    const cacheKey = `${jobId}/${pageNumber}/${lineId}`;
    const etag = `"${createHash('sha256').update(`line-thumb/1\n${cacheKey}`).digest('hex').slice(0, 32)}"`;
    const job = await readableJob(session.accountId, jobId);
    ctx.set('ETag', etag);
    // Cut from the page image, which never changes; the user's, so private to the browser.
    ctx.set('Cache-Control', 'private, max-age=86400');
    if (ctx.get('If-None-Match') === etag) {
      ctx.status = 304;
      return;
    }
    let body = thumbs.get(cacheKey);
    if (!body) {
      const stored = await unlessExpired(() => storedPageOf(runtime, job, pageNumber));
      const line = stored.export.regions.flatMap((region) => region.lines).find((candidate) => candidate.id === lineId);
      if (!line) throw new PortalHttpError('not_found', 'The page has no such line.');
      let pixels: Awaited<ReturnType<typeof pagePixels>>;
      try {
        pixels = await unlessExpired(() => pagePixels(runtime, job, pageNumber, runtime.config.limits.maxImagePixels));
      } catch (error) {
        if (error instanceof PortalHttpError || (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') throw error;
        throw new PortalHttpError('page_image_unreadable', `The page image cannot be shown: ${(error as Error).message.split('\n')[0]}`);
      }
      // The line's box in the page's pixels (the result's coordinates scaled, should they differ), with a margin.
      const sx = pixels.width / stored.export.width;
      const sy = pixels.height / stored.export.height;
      const margin = Math.round(line.box.height * 0.15) + 4;
      const x = Math.max(0, Math.floor((line.box.x - margin) * sx));
      const y = Math.max(0, Math.floor((line.box.y - margin) * sy));
      const width = Math.max(1, Math.min(pixels.width - x, Math.ceil((line.box.width + 2 * margin) * sx)));
      const height = Math.max(1, Math.min(pixels.height - y, Math.ceil((line.box.height + 2 * margin) * sy)));
      const scale = Math.min(1, THUMB_MAX.width / width, THUMB_MAX.height / height);
      const image = await renderIiifImage(pixels, {
        region: { x, y, width, height },
        size: { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) },
        rotation: 0,
        mirror: false,
        quality: 'default',
        format: 'jpg',
      });
      body = image.body;
      thumbs.set(cacheKey, body);
    }
    ctx.type = 'image/jpeg';
    ctx.body = body;
  });

  /** The account's job, done and not expired: another account's or an unknown one is not found, one without text not either. */
  async function readableJob(accountId: string, jobId: string) {
    if (!UUID.test(jobId)) throw new PortalHttpError('not_found', 'There is no such job.');
    return unlessExpired(() => doneJobOf(runtime.db.pool, accountId, jobId));
  }
}

/** The use cases' refusals as the portal's: an expired result 410, anything else of the job's not found. */
async function unlessExpired<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CorrectionError && error.code === 'result_expired') throw new PortalHttpError('result_expired', error.message);
    if (error instanceof Rejection || error instanceof CorrectionError)
      throw new PortalHttpError('not_found', 'There is no such job or page, or it has no text.');
    throw error;
  }
}
