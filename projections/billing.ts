import type { Projection } from './projection.ts';

// One row per done job: what billing counts. Failed and cancelled jobs never get a row.
export const billingProjection: Projection = {
  name: 'billing',
  tables: ['billing'],
  handles: ['JobSucceeded'],
  apply: `
declare
  queued jsonb;
begin
  select q.data into queued from events q where q.stream_id = e.stream_id and q.stream_version = 1;
  insert into billing (job_id, account_id, pages, tier, finished_at)
  values ((queued->>'jobId')::uuid, (queued->>'accountId')::uuid, (queued->>'pageCount')::int,
    queued->'options'->>'llmTier', (e.data->>'finishedAt')::timestamptz);
end`,
};
