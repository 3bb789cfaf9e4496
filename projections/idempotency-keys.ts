import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Idempotency-Key → job, per account. A later job with the same key (after the
// 24 h window) takes the key over.
export const idempotencyKeysProjection: Projection = {
  name: 'idempotency_keys',
  tables: ['idempotency_keys'],
  handles: ['JobQueued'],
  apply: `
begin
  if e.data->'idempotency' <> 'null'::jsonb then
    insert into idempotency_keys (account_id, idempotency_key, request_hash, job_id, created_at)
    values ((e.data->>'accountId')::uuid, e.data->'idempotency'->>'key', e.data->'idempotency'->>'requestHash',
      (e.data->>'jobId')::uuid, (e.data->>'createdAt')::timestamptz)
    on conflict (account_id, idempotency_key) do update
      set request_hash = excluded.request_hash, job_id = excluded.job_id, created_at = excluded.created_at;
  end if;
end`,
};

// Reads of this read model: a submission with an Idempotency-Key.

/** The job this account's key named within the last `windowHours`, with the hash of that request. */
export async function findIdempotencyKey(
  db: Queryable,
  accountId: string,
  key: string,
  windowHours: number,
): Promise<{ job_id: string; request_hash: string } | undefined> {
  const result = await db.query<{ job_id: string; request_hash: string }>(
    `select job_id, request_hash from idempotency_keys
     where account_id = $1 and idempotency_key = $2 and created_at > now() - make_interval(hours => $3)`,
    [accountId, key, windowHours],
  );
  return result.rows[0];
}
