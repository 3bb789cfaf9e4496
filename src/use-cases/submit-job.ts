// Submission: append JobQueued (and its page tasks) once per Idempotency-Key.
// The same key from the same account within 24 h returns the original job; the
// same key with a different request is refused.
import { decideJob, type JobCommand } from '../../domain/job-decide.ts';
import { findIdempotencyKey } from '../../projections/idempotency-keys.ts';
import { initialJobState } from '../../domain/job.ts';
import type { Queryable } from '../db/database.ts';
import { IDEMPOTENCY_LOCK_NAMESPACE } from '../store/locks.ts';
import type { CommandBus } from './command-bus.ts';

export const IDEMPOTENCY_WINDOW_HOURS = 24;

export class IdempotencyConflict extends Error {
  readonly jobId: string;
  constructor(jobId: string) {
    super(`This Idempotency-Key was used within the last ${IDEMPOTENCY_WINDOW_HOURS} h for a different request (job ${jobId}).`);
    this.name = 'IdempotencyConflict';
    this.jobId = jobId;
  }
}

/** The SubmitJob command without its clock, plus the request it came from. */
export type Submission = Omit<Extract<JobCommand, { type: 'SubmitJob' }>, 'type' | 'now'> & {
  requestId?: string;
  /** Who submits, when not an API key (the portal: `user:<id>`). */
  actor?: string;
};

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
    const state = initialJobState();
    const { requestId, actor, ...command } = submission;
    const events = decideJob(state, { type: 'SubmitJob', ...command, now: new Date() });
    await bus.commitJobEvents(client, { ...state, jobId: submission.jobId }, events, {
      actor: actor ?? submission.keyId ?? 'api',
      requestId,
    });
    return { jobId: submission.jobId, replayed: false };
  });
}
