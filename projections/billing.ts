import type { Projection } from './projection.ts';

// One row per done job: what billing counts (docs/billing.md). Failed and cancelled jobs never
// get a row. The correction tier is billed only when correction ran: `corrected_pages` counts
// the pages whose correction answer was applied (a PageCompleted with correction usage and
// outcome 'applied'; events recorded before the outcome was copied count when they carry usage),
// and `tier` is the job's llm_tier when it is above 0, else 'none'. Migration 0008 applied the
// same rule to the rows written before.
export const billingProjection: Projection = {
  name: 'billing',
  tables: ['billing'],
  handles: ['JobSucceeded'],
  apply: `
declare
  queued jsonb;
  corrected int;
begin
  select q.data into queued from events q where q.stream_id = e.stream_id and q.stream_version = 1;
  select count(*)::int into corrected from events p
  where p.stream_id = e.stream_id and p.type = 'PageCompleted'
    and jsonb_typeof(p.data->'correction') = 'object'
    and coalesce(p.data->'correction'->>'outcome', 'applied') = 'applied';
  insert into billing (job_id, account_id, pages, tier, corrected_pages, finished_at)
  values ((queued->>'jobId')::uuid, (queued->>'accountId')::uuid, (queued->>'pageCount')::int,
    case when corrected > 0 then queued->'options'->>'llmTier' else 'none' end, corrected,
    (e.data->>'finishedAt')::timestamptz);
end`,
};
