-- Billing: the correction tier only when correction ran (docs/billing.md). `corrected_pages`
-- counts the job's pages whose PageCompleted says the correction answer was applied (events
-- recorded before the outcome was copied into PageCompleted count when they carry any
-- correction usage); `tier` is the job's llm_tier when that count is above 0, else 'none'.
-- Existing rows are recomputed here by the same rule as the billing projection, so
-- `hwr projections verify` stays exact without a rebuild (rows billed at a tier before
-- this migration for jobs whose correction never ran now say 'none').
alter table billing add column if not exists corrected_pages integer not null default 0;

update billing b
set corrected_pages = c.corrected,
    tier = case when c.corrected > 0 then q.data->'options'->>'llmTier' else 'none' end
from events q,
  lateral (
    select count(*)::int as corrected
    from events p
    where p.stream_id = q.stream_id and p.type = 'PageCompleted'
      and jsonb_typeof(p.data->'correction') = 'object'
      and coalesce(p.data->'correction'->>'outcome', 'applied') = 'applied'
  ) c
where q.stream_id = 'job-' || b.job_id::text and q.stream_version = 1;
