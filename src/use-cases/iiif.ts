// IIIF for a done job (docs/iiif.md, ADR 0036): signed short-lived URLs a viewer can follow without
// an API key header, the job's pages as the manifest, annotations and search see them (people's
// corrections applied), and the page pixels the Image API cuts from, decoded once and cached.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readPageCorrections } from '../../projections/corrections.ts';
import { findActiveKeyById, listAccountKeys } from '../../projections/api-keys.ts';
import { readJobPages, type JobStatusRow } from '../../projections/job-status.ts';
import { BlobNotFoundError, type BlobStore } from '../blobs/blob-store.ts';
import type { Database, Queryable } from '../db/database.ts';
import { applyCorrections, type ExportPage } from '../export/export-page.ts';
import type { IiifPage } from '../export/iiif-presentation.ts';
import type { RawPixels } from '../export/iiif-image.ts';
import { isJpeg2000 } from '../recognition/image/jpeg2000-header.ts';
import { openImage } from '../recognition/image/open-image.ts';
import { LruCache } from '../shared/lru-cache.ts';
import { storedPageOf } from './corrections.ts';
import { CorrectionError } from './errors.ts';

/** How long a signed IIIF URL lives by default, and at most (`?ttl=` on the manifest request). */
export const IIIF_URL_TTL_SECONDS = 3600;
export const IIIF_URL_MAX_TTL_SECONDS = 24 * 3600;
/** Expiry times are rounded up to this step, so that URLs minted close together are the same (caches). */
const EXPIRY_STEP_SECONDS = 600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Who a signed URL was made for: the key whose hash signs it, so that revoking the key revokes the URL. */
export interface IiifSigner {
  keyId: string;
  keyHash: string;
}

/** `<key_id>.<expires, Unix seconds>.<HMAC-SHA256(key hash, job, key, expiry), base64url>`: a path segment. */
export function signIiifToken(jobId: string, signer: IiifSigner, ttlSeconds: number, now = Date.now()): { token: string; expiresAt: Date } {
  const expires = Math.ceil((now / 1000 + ttlSeconds) / EXPIRY_STEP_SECONDS) * EXPIRY_STEP_SECONDS;
  return { token: `${signer.keyId}.${expires}.${signature(jobId, signer, expires)}`, expiresAt: new Date(expires * 1000) };
}

function signature(jobId: string, signer: IiifSigner, expires: number): string {
  return createHmac('sha256', Buffer.from(signer.keyHash, 'hex'))
    .update(`hwr-iiif/1\n${jobId}\n${signer.keyId}\n${expires}`)
    .digest('base64url');
}

/** Where a job's signed IIIF URLs start: `<base>/v1/process-scan/<job>/iiif/<token>` (the manifest is `…/manifest`). */
export function signedIiifBase(baseUrl: string, jobId: string, token: string): string {
  return `${baseUrl.replace(/\/$/, '')}/v1/process-scan/${jobId}/iiif/${token}`;
}

/**
 * The signed manifest URL the portal offers for a done job (docs/iiif.md, "From the portal"; ADR
 * 0041): signed as GET …/iiif/manifest signs for a key, with the key that submitted the job while
 * it is active, else the account's newest active key; null where the account has none. Revoking
 * that key ends the URL, as for a URL the key fetched itself.
 */
export async function portalIiifManifestUrl(
  db: Queryable,
  baseUrl: string,
  job: { jobId: string; accountId: string; submittedBy: string | null },
  ttlSeconds = IIIF_URL_TTL_SECONDS,
): Promise<{ url: string; expiresAt: Date; keyLabel: string; keyPrefix: string } | null> {
  const keys = (await listAccountKeys(db, job.accountId)).filter((key) => key.revoked_at === null);
  const chosen = keys.find((key) => key.key_id === job.submittedBy) ?? keys.at(-1);
  const signer = chosen && (await findActiveKeyById(db, chosen.key_id));
  if (!chosen || !signer || signer.account_id !== job.accountId) return null;
  const { token, expiresAt } = signIiifToken(job.jobId, { keyId: signer.key_id, keyHash: signer.key_hash }, ttlSeconds);
  return { url: `${signedIiifBase(baseUrl, job.jobId, token)}/manifest`, expiresAt, keyLabel: chosen.label, keyPrefix: chosen.prefix };
}

export type IiifTokenCheck =
  | { ok: true; keyId: string; accountId: string; keyHash: string; expiresAt: Date }
  | { ok: false; reason: string };

/** Checks a token for a job: well-formed, not expired, signed with a key that is still active. */
export async function checkIiifToken(db: Queryable, jobId: string, token: string, now = Date.now()): Promise<IiifTokenCheck> {
  const match = /^([0-9a-f-]{36})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match || !UUID.test(match[1])) return { ok: false, reason: 'The IIIF URL is not a signed URL of this service.' };
  const expires = Number(match[2]);
  if (expires * 1000 <= now)
    return { ok: false, reason: `The IIIF URL expired at ${new Date(expires * 1000).toISOString()}; ask for the manifest again.` };
  const key = await findActiveKeyById(db, match[1]);
  if (!key) return { ok: false, reason: 'The key the IIIF URL was made with is revoked or unknown.' };
  const expected = Buffer.from(signature(jobId, { keyId: key.key_id, keyHash: key.key_hash }, expires));
  const given = Buffer.from(match[3]);
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    return { ok: false, reason: 'The IIIF URL is not a signed URL of this service.' };
  return { ok: true, keyId: key.key_id, accountId: key.account_id, keyHash: key.key_hash, expiresAt: new Date(expires * 1000) };
}

export interface IiifDeps {
  db: Database;
  blobs: BlobStore;
}

const PAGES_KEPT = 2048;
const pageSizes = new LruCache<string, IiifPage>(PAGES_KEPT);

/** The job's pages with their image sizes (from the stored results, cached: they never change). */
export async function iiifPages(deps: IiifDeps, job: JobStatusRow): Promise<IiifPage[]> {
  const rows = (await readJobPages(deps.db.pool, job.job_id)).sort((a, b) => a.page_number - b.page_number);
  const pages: IiifPage[] = [];
  for (const row of rows) {
    const key = `${job.job_id}/${row.page_number}`;
    let page = pageSizes.get(key);
    if (!page) {
      const stored = await storedPageOf(deps, job, row.page_number);
      page = { pageNumber: row.page_number, name: row.name, width: stored.export.width, height: stored.export.height };
      pageSizes.set(key, page);
    }
    pages.push(page);
  }
  return pages;
}

/** A page as it reads now: the machine's reading with people's corrections in place. */
export async function iiifExportPage(deps: IiifDeps, job: JobStatusRow, page: number): Promise<ExportPage> {
  const stored = await storedPageOf(deps, job, page);
  const corrections = await readPageCorrections(deps.db.pool, job.job_id, page);
  return applyCorrections(stored.export, Object.fromEntries(corrections.lines));
}

/** Decoded page pixels, by page image key, within a byte budget (a 2,000 × 3,000 colour page is 18 MB). */
class PixelCache {
  private readonly entries = new Map<string, RawPixels>();
  private bytes = 0;
  private readonly budget: number;
  constructor(budget: number) {
    this.budget = budget;
  }
  get(key: string): RawPixels | undefined {
    const value = this.entries.get(key);
    if (value) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }
  set(key: string, value: RawPixels): void {
    if (value.data.length > this.budget) return;
    this.entries.set(key, value);
    this.bytes += value.data.length;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(oldest);
      this.bytes -= entry.data.length;
    }
  }
}

const PIXEL_BUDGET_BYTES = 256 * 1024 * 1024;
const pixels = new PixelCache(PIXEL_BUDGET_BYTES);
const decoding = new Map<string, Promise<RawPixels>>();
let jpeg2000Queue: Promise<unknown> = Promise.resolve();

/** The pixels of a page image, as its coordinates refer to them (EXIF orientation applied); decoded once, shared while cached. */
export async function pagePixels(deps: IiifDeps, job: JobStatusRow, page: number, maxImagePixels: number): Promise<RawPixels> {
  const row = (await readJobPages(deps.db.pool, job.job_id)).find((candidate) => candidate.page_number === page);
  if (!row) throw new CorrectionError('result_expired', `The page image of page ${page} is no longer stored.`);
  const cached = pixels.get(row.blob_key);
  if (cached) return cached;
  let pending = decoding.get(row.blob_key);
  if (!pending) {
    pending = decode(deps.blobs, row.blob_key, maxImagePixels).finally(() => decoding.delete(row.blob_key));
    decoding.set(row.blob_key, pending);
  }
  const decoded = await pending;
  pixels.set(row.blob_key, decoded);
  return decoded;
}

async function decode(blobs: BlobStore, key: string, maxImagePixels: number): Promise<RawPixels> {
  let source: Buffer;
  try {
    source = await blobs.get(key);
  } catch (error) {
    if (error instanceof BlobNotFoundError) throw new CorrectionError('result_expired', 'The page image is no longer stored.');
    throw error;
  }
  const work = async (): Promise<RawPixels> => {
    const { data, info } = await (await openImage(source, { page: 0, limitInputPixels: maxImagePixels }))
      .rotate()
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels: info.channels };
  };
  if (!isJpeg2000(source)) return work();
  // A JPEG 2000 page is decoded whole, outside the workers' pixel budget: one at a time.
  const run = jpeg2000Queue.then(work, work);
  jpeg2000Queue = run.catch(() => {});
  return run;
}

/** Rendered Image API answers, by page image key and normalised request. */
export const renderedImages = new LruCache<string, { body: Buffer; type: string }>(512);
