// Submits an uploaded scan ZIP as a job: idempotency first, then intake (pages into the blob
// store), the upload kept, and the job queued. The API's POST /v1/process-scan and the portal's
// upload form both come here (through http/scan-upload.ts). A refusal leaves nothing of the job
// behind in the store; the upload file itself is the caller's.
import { createHash, randomUUID } from 'node:crypto';
import type { JobOptions } from '../../domain/events.ts';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { jobPrefix, pagesPrefix, uploadKey } from '../blobs/blob-keys.ts';
import type { Config } from '../platform/config.ts';
import type { Database } from '../db/database.ts';
import { intakeScanZip } from '../intake/scan-zip.ts';
import type { CommandBus } from './command-bus.ts';
import { accountDefaultModel, usableModel } from './models.ts';
import { type AccountLimits, findIdempotentJob, submitJob } from './submit-job.ts';

export interface ScanSubmission {
  accountId: string;
  /** The API key that submits; null for a portal user (then `actor`). */
  keyId: string | null;
  actor?: string;
  upload: { path: string; name: string; sha256: string | null | undefined };
  options: JobOptions;
  /**
   * The request named no model (not even `default`): the pages are read with the account's default
   * model (accountDefaultModel), resolved after the idempotency check, so a retry of the same request
   * is the same request whatever the default is by then.
   */
  modelUnnamed?: boolean;
  idempotencyKey: string | null;
  requestId?: string;
}

export interface SubmitScanDeps {
  config: Config;
  db: Database;
  bus: CommandBus;
  blobs: BlobStore;
}

export interface SubmittedScan {
  jobId: string;
  /** An earlier job of the same Idempotency-Key and request, answered again. */
  replayed: boolean;
  /** Pages read from the upload; 0 for a replay. */
  pages: number;
}

/** The account's limits on unfinished work, from the configuration. */
export function accountLimits(config: Config): AccountLimits {
  return { maxActiveJobs: config.limits.maxActiveJobsPerAccount, maxQueuedPages: config.limits.maxQueuedPagesPerAccount };
}

/** Throws IdempotencyConflict, AccountLimitExceeded, ModelError (the model named) and intake's coded errors. */
export async function submitScan(deps: SubmitScanDeps, submission: ScanSubmission): Promise<SubmittedScan> {
  const { config, blobs } = deps;
  const idempotency = submission.idempotencyKey
    ? {
        key: submission.idempotencyKey,
        requestHash: createHash('sha256')
          .update(`${submission.upload.sha256}\n${JSON.stringify(submission.options)}`)
          .digest('hex'),
      }
    : null;
  if (idempotency) {
    const existing = await findIdempotentJob(deps.db.pool, submission.accountId, idempotency);
    if (existing) return { jobId: existing, replayed: true, pages: 0 };
  }
  // A trained model must be the account's and ready (docs/models.md); the job records its id. A
  // request that names none takes the account's default, while that model is ready.
  let options = submission.options;
  if (options.model !== undefined) await usableModel(deps.db.pool, submission.accountId, options.model, 'model');
  else if (submission.modelUnnamed) {
    const { effective } = await accountDefaultModel(deps.db.pool, submission.accountId);
    if (effective !== DEFAULT_MODEL) options = { ...options, model: effective };
  }

  const jobId = randomUUID();
  const jobFiles = jobPrefix(jobId);
  try {
    const pages = await intakeScanZip(submission.upload.path, {
      limits: config.limits,
      blobs,
      keyPrefix: pagesPrefix(jobId),
      uploadName: submission.upload.name,
    });
    const upload = uploadKey(jobId);
    await blobs.moveIn(upload, submission.upload.path);
    const submitted = await submitJob(deps.bus, {
      jobId,
      accountId: submission.accountId,
      keyId: submission.keyId,
      pages,
      options,
      uploadKey: upload,
      retentionSeconds: config.results.retentionSeconds,
      idempotency,
      requestId: submission.requestId,
      actor: submission.actor,
      limits: accountLimits(config),
    });
    if (submitted.replayed) await blobs.deletePrefix(jobFiles);
    return { ...submitted, pages: pages.length };
  } catch (error) {
    await blobs.deletePrefix(jobFiles).catch(() => {});
    throw error;
  }
}
