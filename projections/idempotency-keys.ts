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
