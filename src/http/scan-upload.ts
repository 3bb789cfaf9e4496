// Receiving a scan upload (POST /v1/process-scan, and the portal's upload form): the upload streams
// to a temp file (never held in memory), is checked and split into pages by intake, and becomes a
// queued job.
import { randomUUID } from 'node:crypto';
import { mkdir, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Context, Middleware, Next } from 'koa';
import { koaBody } from 'koa-body';
import { findIdempotencyKey } from '../../projections/idempotency-keys.ts';
import { readJobStatus } from '../../projections/job-status.ts';
import type { Config } from '../platform/config.ts';
import { uploadTooLargeError } from '../intake/intake-error.ts';
import { tempUploadDir } from '../intake/temp-uploads.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { accountLimits, submitScan } from '../use-cases/submit-scan.ts';
import { type AccountLimits, accountLimitRefusal, IDEMPOTENCY_WINDOW_HOURS } from '../use-cases/submit-job.ts';
import type { AuthContext } from './authenticate.ts';
import { resultUrl, statusUrl } from './job-view.ts';
import { HttpProblem } from './problem.ts';
import { field, parseSubmissionOptions } from './submission-options.ts';

/** Multipart overhead allowed on top of MAX_UPLOAD_BYTES before a request is refused unread. */
const MULTIPART_OVERHEAD_BYTES = 1024 * 1024;
const MAX_FORM_FIELDS = 20;
const DISK_LOW_RETRY_AFTER_SECONDS = 300;
const MAX_FORM_FIELDS_BYTES = 64 * 1024;
/** The `code` of formidable's errors (formidable 3, src/FormidableError.js; koa-body's parser). */
const FORMIDABLE_ERRORS = {
  maxFieldsSizeExceeded: 1006,
  maxFieldsExceeded: 1007,
  biggerThanTotalMaxFileSize: 1009,
  maxFilesExceeded: 1015,
  biggerThanMaxFileSize: 1016,
} as const;

export interface UploadedFile {
  filepath: string;
  size: number;
  originalFilename: string | null;
  hash?: string | null;
}

/**
 * The middleware that receives a scan upload and submits it, after the caller's authentication
 * (an API key's, or the portal's session): refusals that need no body first, then the body, then
 * the submission (use-cases/submit-scan.ts), answered 202 with the job.
 */
export function receiveScanUpload(runtime: Runtime): Middleware[] {
  const { config } = runtime;
  const uploadDir = tempUploadDir(config.dataDir);
  return [
    refuseOversizedUpload(config, SCAN_UPLOAD),
    refuseWhenDiskLow(config),
    refuseOverAccountLimits(runtime, accountLimits(config)),
    parseUpload(config, uploadDir, SCAN_UPLOAD),
    async (ctx) => {
      const file = uploadedFile(ctx, SCAN_UPLOAD);
      try {
        const auth = ctx.state.auth as AuthContext;
        const fields = (ctx.request.body ?? {}) as Record<string, string | string[]>;
        const submitted = await submitScan(runtime, {
          accountId: auth.accountId,
          keyId: auth.actor ? null : auth.keyId,
          actor: auth.actor,
          upload: { path: file.filepath, name: file.originalFilename ?? 'scan_zip', sha256: file.hash },
          options: await parseSubmissionOptions(fields, config),
          modelUnnamed: field(fields, 'model') === null,
          idempotencyKey: readIdempotencyKey(ctx),
          requestId: ctx.state.requestId,
        });
        if (submitted.pages > 0) {
          ctx.state.log.info(
            { job_id: submitted.jobId, account_id: auth.accountId, pages: submitted.pages, replayed: submitted.replayed },
            'job submitted',
          );
        }
        await respondWithSubmission(ctx, runtime, submitted.jobId, submitted.replayed);
      } finally {
        await rm(file.filepath, { force: true });
      }
    },
  ];
}

async function respondWithSubmission(ctx: Context, runtime: Runtime, jobId: string, replayed: boolean): Promise<void> {
  const row = await readJobStatus(runtime.db.pool, jobId);
  if (!row) throw new Error(`job ${jobId} was recorded but has no status row`);
  const { baseUrl } = runtime.config;
  ctx.status = 202;
  ctx.set('Location', statusUrl(baseUrl, jobId));
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
  // The submission body, identical for a replayed Idempotency-Key.
  ctx.body = {
    job_id: row.job_id,
    state: 'queued',
    page_count: row.page_count,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    status_url: statusUrl(baseUrl, jobId),
    result_url: resultUrl(baseUrl, jobId),
  };
}

/** The multipart field an upload's ZIP comes in, what it is called in messages, and the refusal when it is missing. */
export interface UploadField {
  name: string;
  what: string;
  missing(): Error;
}

const SCAN_UPLOAD: UploadField = {
  name: 'scan_zip',
  what: 'scan',
  missing: () => new HttpProblem('missing_scan_zip', 'The multipart field scan_zip (the ZIP of page images) is required.'),
};

export function refuseOversizedUpload(config: Config, field: UploadField) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const length = Number(ctx.get('Content-Length'));
    if (Number.isFinite(length) && length > config.limits.maxUploadBytes + MULTIPART_OVERHEAD_BYTES) {
      ctx.set('Connection', 'close');
      throw uploadTooLargeError(config.limits.maxUploadBytes);
    }
    if (!ctx.is('multipart/form-data')) {
      throw new HttpProblem(
        'unsupported_media_type',
        `Send the ${field.what} as multipart/form-data with the ZIP in the field ${field.name}.`,
      );
    }
    await next();
  };
}

/**
 * An upload needs room for itself and its pages: below MIN_FREE_DISK_BYTES free on DATA_DIR's
 * file system, refuse before reading the body, with 503 and Retry-After (space comes back as
 * results expire), instead of failing half-way through writing it.
 */
export function refuseWhenDiskLow(config: Config) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (config.limits.minFreeDiskBytes > 0) {
      const free = await freeBytes(config.dataDir);
      if (free !== null && free < config.limits.minFreeDiskBytes) {
        ctx.set('Connection', 'close');
        throw new HttpProblem('insufficient_storage', 'The service is low on disk space for uploads; retry later.', {
          headers: { 'Retry-After': String(DISK_LOW_RETRY_AFTER_SECONDS) },
        });
      }
    }
    await next();
  };
}

/**
 * An account at its limits is refused before its upload is read (the exact check, with the
 * upload's page count, is the submission's own). A request whose Idempotency-Key the account has
 * used goes on: it may be the retry of a job already accepted, answered with that job.
 */
function refuseOverAccountLimits(runtime: Runtime, limits: AccountLimits) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const { accountId } = ctx.state.auth as AuthContext;
    const refusal = await accountLimitRefusal(runtime.db.pool, accountId, 1, limits);
    if (refusal) {
      const key = ctx.get('Idempotency-Key').trim();
      const known = key !== '' && (await findIdempotencyKey(runtime.db.pool, accountId, key, IDEMPOTENCY_WINDOW_HOURS)) !== undefined;
      if (!known) {
        ctx.set('Connection', 'close');
        throw refusal;
      }
    }
    await next();
  };
}

async function freeBytes(directory: string): Promise<number | null> {
  try {
    const stats = await statfs(directory);
    return Number(stats.bavail) * Number(stats.bsize);
  } catch {
    return null; // not created yet, or a file system that cannot say: no refusal on a guess
  }
}

/**
 * Each request writes its upload into a directory of its own, removed (with whatever
 * the parser left there) before the response goes out: formidable deletes a partial file
 * only on a timer after an error, and a file whose open was still pending can outlive it.
 */
export function parseUpload(config: Config, uploadRoot: string, field: UploadField) {
  const options = (uploadDir: string) => ({
    multipart: true,
    urlencoded: false,
    json: false,
    text: false,
    formidable: {
      uploadDir,
      maxFiles: 1,
      maxFileSize: config.limits.maxUploadBytes,
      maxTotalFileSize: config.limits.maxUploadBytes,
      maxFields: MAX_FORM_FIELDS,
      maxFieldsSize: MAX_FORM_FIELDS_BYTES,
      hashAlgorithm: 'sha256' as const,
      allowEmptyFiles: true,
      minFileSize: 0,
    },
    onError: (error: Error) => {
      // formidable answers 413 for too many files or fields as well; only size is upload_too_large.
      switch ((error as { code?: unknown }).code) {
        case FORMIDABLE_ERRORS.biggerThanMaxFileSize:
        case FORMIDABLE_ERRORS.biggerThanTotalMaxFileSize:
          throw uploadTooLargeError(config.limits.maxUploadBytes);
        case FORMIDABLE_ERRORS.maxFilesExceeded:
          throw invalidMultipart(`Send exactly one file, the ZIP in the field ${field.name}.`);
        case FORMIDABLE_ERRORS.maxFieldsExceeded:
        case FORMIDABLE_ERRORS.maxFieldsSizeExceeded:
          throw invalidMultipart(`At most ${MAX_FORM_FIELDS} form fields of ${MAX_FORM_FIELDS_BYTES / 1024} KiB in all are accepted.`);
        default:
          throw invalidMultipart(`The request body could not be read as multipart/form-data: ${error.message}`);
      }
    },
  });
  return async (ctx: Context, next: Next): Promise<void> => {
    const uploadDir = path.join(uploadRoot, randomUUID());
    await mkdir(uploadDir, { recursive: true });
    try {
      await koaBody(options(uploadDir))(ctx, next);
    } finally {
      await rm(uploadDir, { recursive: true, force: true });
    }
  };
}

export function uploadedFile(ctx: Context, field: UploadField): UploadedFile {
  const files = ctx.request.files as Record<string, UploadedFile | UploadedFile[]> | undefined;
  const entry = files?.[field.name];
  const file = Array.isArray(entry) ? entry[0] : entry;
  if (!file) {
    for (const other of Object.values(files ?? {})) for (const f of [other].flat()) void rm(f.filepath, { force: true });
    throw field.missing();
  }
  return file;
}

function readIdempotencyKey(ctx: Context): string | null {
  const key = ctx.get('Idempotency-Key').trim();
  if (!key) return null;
  if (key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw new HttpProblem('invalid_idempotency_key', 'Idempotency-Key must be 1-255 visible ASCII characters.');
  }
  return key;
}

function invalidMultipart(detail: string): HttpProblem {
  return new HttpProblem('invalid_multipart', detail);
}
