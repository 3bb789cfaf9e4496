// IIIF for a done job (docs/iiif.md, ADR 0036). The API key fetches the manifest at
// `/v1/process-scan/{job_id}/iiif/manifest`; every URL in it is signed
// (`/v1/process-scan/{job_id}/iiif/{token}/…`), so a viewer, which cannot send the key's header,
// follows them: the manifest again, the Image API 3 service per page, the annotation pages (lines,
// words) and the Content Search 2 service. CORS is open on these routes: the token is the credential.
import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { findActiveKey } from '../../../projections/api-keys.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import { IiifImageError, iiifImageInfo, parseIiifImageRequest, renderIiifImage } from '../../export/iiif-image.ts';
import {
  type Granularity,
  type IiifUrls,
  iiifAnnotationPage,
  iiifManifest,
  iiifSearchResponse,
  type SearchHit,
  searchPage,
} from '../../export/iiif-presentation.ts';
import { doneJobOf } from '../../use-cases/corrections.ts';
import {
  checkIiifToken,
  IIIF_URL_MAX_TTL_SECONDS,
  IIIF_URL_TTL_SECONDS,
  iiifExportPage,
  iiifPages,
  pagePixels,
  renderedImages,
  signedIiifBase,
  signIiifToken,
} from '../../use-cases/iiif.ts';
import { type AuthContext, type Authenticate, presentedKeyHash } from '../authenticate.ts';
import { HttpProblem } from '../problem.ts';
import { jobIdParam } from '../path-params.ts';

const JSON_LD_PRESENTATION = 'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"';
const JSON_LD_IMAGE = 'application/ld+json;profile="http://iiif.io/api/image/3/context.json"';
/** Rendered images at most this large are kept in memory for the next viewer. */
const CACHED_IMAGE_BYTES = 1024 * 1024;
const MAX_SEARCH_HITS = 1000;

export function registerIiifRoutes(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  const { baseUrl } = runtime.config;
  const base = baseUrl.replace(/\/$/, '');

  function urlsFor(jobId: string, token: string): IiifUrls {
    const plain = `${base}/v1/process-scan/${jobId}/iiif`;
    const signed = signedIiifBase(base, jobId, token);
    return {
      manifest: `${signed}/manifest`,
      canvas: (page) => `${plain}/canvas/${page}`,
      imageService: (page) => `${signed}/image/${page}`,
      annotations: (page, granularity) => `${signed}/pages/${page}/${granularity === 'line' ? 'lines' : 'words'}`,
      search: `${signed}/search`,
    };
  }

  /** Viewers run on other origins: the answers may be read by any page that holds the signed URL. */
  const cors = async (ctx: Context, next: Next): Promise<void> => {
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Access-Control-Expose-Headers', 'Content-Location');
    await next();
  };

  /** The signed URL's token: checked, its key's rate applied, then the job (done, not expired, the key's account's). */
  const signed = async (ctx: Context, next: Next): Promise<void> => {
    const jobId = jobIdParam(ctx);
    const token = String(ctx.params.token);
    const check = jobId ? await checkIiifToken(runtime.db.pool, jobId, token) : { ok: false as const, reason: 'No such job.' };
    if (!check.ok) throw new HttpProblem('invalid_iiif_token', check.reason);
    authenticate.accept(ctx, { key_id: check.keyId, account_id: check.accountId });
    ctx.state.iiif = { token, job: await doneJobOf(runtime.db.pool, check.accountId, jobId) };
    ctx.set('Cache-Control', 'private, max-age=600');
    await next();
  };

  async function manifest(ctx: Context, token: string): Promise<void> {
    const job = (ctx.state.iiif as { job: Awaited<ReturnType<typeof doneJobOf>> } | undefined)?.job;
    if (!job) throw new Error('iiif: no job');
    const urls = urlsFor(job.job_id, token);
    ctx.type = JSON_LD_PRESENTATION;
    ctx.set('Content-Location', urls.manifest);
    ctx.body = iiifManifest({ jobId: job.job_id, createdAt: job.created_at.toISOString() }, await iiifPages(runtime, job), urls);
  }

  // The entry point for a client with the key: the manifest, its URLs signed for `ttl` seconds.
  router.get('/v1/process-scan/:jobId/iiif/manifest', cors, authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const jobId = jobIdParam(ctx);
    const job = await doneJobOf(runtime.db.pool, auth.accountId, jobId);
    const ttl = ttlParam(ctx);
    const key = await findActiveKey(runtime.db.pool, presentedKeyHash(ctx));
    if (!key) throw new HttpProblem('invalid_api_key', 'The API key is not valid or has been revoked.');
    const { token, expiresAt } = signIiifToken(job.job_id, { keyId: key.key_id, keyHash: presentedKeyHash(ctx) }, ttl);
    ctx.state.iiif = { token, job };
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Expires', expiresAt.toUTCString());
    await manifest(ctx, token);
  });

  router.get('/v1/process-scan/:jobId/iiif/:token/manifest', cors, signed, async (ctx) => {
    await manifest(ctx, String(ctx.params.token));
  });

  router.get('/v1/process-scan/:jobId/iiif/:token/pages/:page/:granularity', cors, signed, async (ctx) => {
    const { token, job } = ctx.state.iiif;
    const granularity: Granularity | null =
      ctx.params.granularity === 'lines' ? 'line' : ctx.params.granularity === 'words' ? 'word' : null;
    if (!granularity) throw new HttpProblem('not_found', 'Annotations are served as lines or words.');
    const page = pageParam(ctx, job.page_count);
    ctx.type = JSON_LD_PRESENTATION;
    ctx.body = iiifAnnotationPage(await iiifExportPage(runtime, job, page), page, granularity, urlsFor(job.job_id, token));
  });

  router.get('/v1/process-scan/:jobId/iiif/:token/search', cors, signed, async (ctx) => {
    const { token, job } = ctx.state.iiif;
    const query = typeof ctx.query.q === 'string' ? ctx.query.q : '';
    const hits: SearchHit[] = [];
    if (query.trim() !== '') {
      for (let page = 1; page <= job.page_count && hits.length < MAX_SEARCH_HITS; page++)
        hits.push(...searchPage(await iiifExportPage(runtime, job, page), page, query));
    }
    const urls = urlsFor(job.job_id, token);
    ctx.type = 'application/ld+json;profile="http://iiif.io/api/search/2/context.json"';
    ctx.body = iiifSearchResponse(`${urls.search}?q=${encodeURIComponent(query)}`, hits.slice(0, MAX_SEARCH_HITS), urls);
  });

  router.get('/v1/process-scan/:jobId/iiif/:token/image/:page', cors, signed, async (ctx) => {
    const { token, job } = ctx.state.iiif;
    ctx.redirect(`${urlsFor(job.job_id, token).imageService(pageParam(ctx, job.page_count))}/info.json`);
    ctx.status = 303;
    ctx.body = '';
  });

  router.get('/v1/process-scan/:jobId/iiif/:token/image/:page/info.json', cors, signed, async (ctx) => {
    const { token, job } = ctx.state.iiif;
    const page = pageParam(ctx, job.page_count);
    const size = (await iiifPages(runtime, job))[page - 1];
    ctx.type = ctx.accepts('application/ld+json', 'application/json') === 'application/ld+json' ? JSON_LD_IMAGE : 'application/json';
    ctx.body = iiifImageInfo(urlsFor(job.job_id, token).imageService(page), size.width, size.height);
  });

  router.get('/v1/process-scan/:jobId/iiif/:token/image/:page/:region/:size/:rotation/:file', cors, signed, async (ctx) => {
    const { job } = ctx.state.iiif;
    const page = pageParam(ctx, job.page_count);
    const size = (await iiifPages(runtime, job))[page - 1];
    let request: ReturnType<typeof parseIiifImageRequest>;
    try {
      request = parseIiifImageRequest(
        {
          region: String(ctx.params.region),
          size: String(ctx.params.size),
          rotation: String(ctx.params.rotation),
          file: String(ctx.params.file),
        },
        size,
      );
    } catch (error) {
      if (error instanceof IiifImageError)
        throw new HttpProblem(error.status === 501 ? 'iiif_feature_not_supported' : 'invalid_iiif_request', error.message);
      throw error;
    }
    const cacheKey = `${job.job_id}/${page}/${JSON.stringify(request)}`;
    let image = renderedImages.get(cacheKey);
    if (!image) {
      const pixels = await pagePixels(runtime, job, page, runtime.config.limits.maxImagePixels);
      if (pixels.width !== size.width || pixels.height !== size.height)
        ctx.state.log.warn(
          { job_id: job.job_id, page },
          `IIIF: page pixels ${pixels.width}x${pixels.height}, result ${size.width}x${size.height}`,
        );
      image = await renderIiifImage(pixels, request);
      if (image.body.length <= CACHED_IMAGE_BYTES) renderedImages.set(cacheKey, image);
    }
    // A page image never changes: a long private cache.
    ctx.set('Cache-Control', 'private, max-age=86400');
    ctx.type = image.type;
    ctx.body = image.body;
  });
}

function ttlParam(ctx: Context): number {
  const raw = ctx.query.ttl;
  if (raw === undefined) return IIIF_URL_TTL_SECONDS;
  const ttl = Number(raw);
  if (typeof raw !== 'string' || !/^\d{1,6}$/.test(raw) || ttl < 60 || ttl > IIIF_URL_MAX_TTL_SECONDS)
    throw new HttpProblem('invalid_iiif_request', `ttl is a number of seconds from 60 to ${IIIF_URL_MAX_TTL_SECONDS}.`);
  return ttl;
}

function pageParam(ctx: Context, pageCount: number): number {
  const raw = String(ctx.params.page);
  const page = /^[1-9][0-9]{0,8}$/.test(raw) ? Number(raw) : 0;
  if (page < 1 || page > pageCount) throw new HttpProblem('not_found', `The job has no page ${raw.slice(0, 20)}.`);
  return page;
}
