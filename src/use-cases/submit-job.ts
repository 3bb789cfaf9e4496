// Submission: append JobQueued (and its page tasks) once per Idempotency-Key.
// The same key from the same account within 24 h returns the original job; the
// same key with a different request is refused.
import { decideJob, type JobCommand } from '../../domain/job-decide.ts';
import { findIdempotencyKey } from '../../projections/idempotency-keys.ts';
import { readAccountUnfinishedJobs } from '../../projections/job-status.ts';
import { initialJobState } from '../../domain/job.ts';
import type { Queryable } from '../db/database.ts';
import { ACCOUNT_SUBMISSION_LOCK_NAMESPACE, IDEMPOTENCY_LOCK_NAMESPACE } from '../store/locks.ts';
import type { CommandBus } from './command-bus.ts';
import { SubmissionError } from './errors.ts';

export const IDEMPOTENCY_WINDOW_HOURS = 24;

export class IdempotencyConflict extends SubmissionError {
  readonly jobId: string;
  constructor(jobId: string) {
    super(
      'idempotency_key_reused',
      `This Idempotency-Key was used within the last ${IDEMPOTENCY_WINDOW_HOURS} h for a different request (job ${jobId}).`,
    );
    this.jobId = jobId;
  }
}

/**
 * Per-account admission limits (MAX_ACTIVE_JOBS_PER_ACCOUNT, MAX_QUEUED_PAGES_PER_ACCOUNT; 0: none).
 * Past them a submission is refused, not queued: its upload and page images would take storage for
 * as long as it waited (docs/contract.md, "Limits"). Within them, jobs queue fairly (fair-share.ts).
 */
export interface AccountLimits {
  maxActiveJobs: number;
  maxQueuedPages: number;
}

/** A job of the account has to finish first: no telling when, so a poll interval's worth. */
const ACCOUNT_LIMIT_RETRY_AFTER_SECONDS = 30;

export class AccountLimitExceeded extends SubmissionError {
  declare readonly code: 'too_many_active_jobs' | 'too_many_queued_pages';
  constructor(code: 'too_many_active_jobs' | 'too_many_queued_pages', detail: string) {
    super(code, detail, ACCOUNT_LIMIT_RETRY_AFTER_SECONDS);
  }
}

/** The SubmitJob command without its clock, plus the request it came from. */
export type Submission = Omit<Extract<JobCommand, { type: 'SubmitJob' }>, 'type' | 'now'> & {
  requestId?: string;
  /** Who submits, when not an API key (the portal: `user:<id>`). */
  actor?: string;
  /** Refuse the job (AccountLimitExceeded) past these; checked under the account's submission lock. */
  limits?: AccountLimits;
};

/**
 * The refusal a job of `pages` pages gets from `accountId`'s unfinished jobs, or null. Exact inside
 * a submission's transaction under the account's submission lock; outside one, a cheap early answer.
 */
export async function accountLimitRefusal(
  db: Queryable,
  accountId: string,
  pages: number,
  limits: AccountLimits,
): Promise<AccountLimitExceeded | null> {
  if (limits.maxActiveJobs <= 0 && limits.maxQueuedPages <= 0) return null;
  const unfinished = await readAccountUnfinishedJobs(db, accountId);
  if (limits.maxActiveJobs > 0 && unfinished.length >= limits.maxActiveJobs) {
    return new AccountLimitExceeded(
      'too_many_active_jobs',
      `The account has ${unfinished.length} jobs queued or processing, the most it may have at once ` +
        `(${limits.maxActiveJobs}); submit again when one of them has finished, or cancel one.`,
    );
  }
  const queued = unfinished.reduce((sum, job) => sum + job.page_count - job.pages_done, 0);
  if (limits.maxQueuedPages > 0 && queued + pages > limits.maxQueuedPages) {
    return new AccountLimitExceeded(
      'too_many_queued_pages',
      `The account's jobs have ${queued} pages still to process; with this upload's ${pages} that is more than the ` +
        `${limits.maxQueuedPages} it may have waiting at once; submit again when more of them are done.`,
    );
  }
  return null;
}

/** The job an Idempotency-Key already names, or null. Throws IdempotencyConflict for a different request. */
export async function findIdempotentJob(
  db: Queryable,
  accountId: string,
  idempotency: { key: string; requestHash: string },
): Promise<string | null> {
  const row = await findIdempotencyKey(db, accountId, idempotency.key, IDEMPOTENCY_WINDOW_HOURS);
  if (!row) return null;
  if (row.request_hash !== idempotency.requestHash) throw new IdempotencyConflict(row.job_id);
  return row.job_id;
}

/** Returns the job id: the new one, or the original one for a repeated Idempotency-Key. */
export async function submitJob(bus: CommandBus, submission: Submission): Promise<{ jobId: string; replayed: boolean }> {
  return bus.db.transaction(async (client) => {
    if (submission.idempotency) {
      await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [
        IDEMPOTENCY_LOCK_NAMESPACE,
        `${submission.accountId}:${submission.idempotency.key}`,
      ]);
      const existing = await findIdempotentJob(client, submission.accountId, submission.idempotency);
      if (existing) return { jobId: existing, replayed: true };
    }
    if (submission.limits) {
      // One submission of the account at a time past this point, to its commit: the count is exact.
      await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [ACCOUNT_SUBMISSION_LOCK_NAMESPACE, submission.accountId]);
      const refusal = await accountLimitRefusal(client, submission.accountId, submission.pages.length, submission.limits);
      if (refusal) throw refusal;
    }
    const state = initialJobState();
    const { requestId, actor, limits: _limits, ...command } = submission;
    const events = decideJob(state, { type: 'SubmitJob', ...command, now: new Date() });
    await bus.commitJobEvents(client, { ...state, jobId: submission.jobId }, events, {
      actor: actor ?? submission.keyId ?? 'api',
      requestId,
    });
    return { jobId: submission.jobId, replayed: false };
  });
}
