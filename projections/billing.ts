import type { Queryable } from '../src/db/database.ts';
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

// Reads of this read model: `hwr billing`, GET /v1/usage, the portal's usage page.

export interface BillingLine {
  account: string;
  account_id: string;
  jobs: number;
  pages: number;
}

/** Billed pages per account: done jobs only (failed and cancelled jobs have no billing row). */
export async function billingReport(
  db: Queryable,
  filter: { accountId?: string | null; from?: Date | null; to?: Date | null },
): Promise<BillingLine[]> {
  const result = await db.query<{ name: string; account_id: string; jobs: string; pages: string }>(
    `select a.name, b.account_id, count(*) as jobs, sum(b.pages) as pages
     from billing b join accounts a using (account_id)
     where ($1::uuid is null or b.account_id = $1)
       and ($2::timestamptz is null or b.finished_at >= $2)
       and ($3::timestamptz is null or b.finished_at < $3)
     group by a.name, b.account_id order by a.name`,
    [filter.accountId ?? null, filter.from ?? null, filter.to ?? null],
  );
  return result.rows.map((row) => ({ account: row.name, account_id: row.account_id, jobs: Number(row.jobs), pages: Number(row.pages) }));
}

export interface BilledPeriod {
  period: string;
  jobs: number;
  pages: number;
}

/** An account's billed jobs and pages per UTC month (newest first, at most 24). */
export async function billedByMonth(db: Queryable, accountId: string): Promise<BilledPeriod[]> {
  const result = await db.query<{ period: string; jobs: string; pages: string }>(
    `select to_char(date_trunc('month', finished_at at time zone 'UTC'), 'YYYY-MM') as period, count(*) as jobs, sum(pages) as pages
     from billing where account_id = $1 group by 1 order by 1 desc limit 24`,
    [accountId],
  );
  return result.rows.map((row) => ({ period: row.period, jobs: Number(row.jobs), pages: Number(row.pages) }));
}

/** An account's billed jobs and pages per UTC day over the last 31 days (newest first). */
export async function billedByDay(db: Queryable, accountId: string): Promise<BilledPeriod[]> {
  const result = await db.query<{ period: string; jobs: string; pages: string }>(
    `select to_char(finished_at at time zone 'UTC', 'YYYY-MM-DD') as period, count(*) as jobs, sum(pages) as pages
     from billing where account_id = $1 and finished_at >= now() - interval '31 days' group by 1 order by 1 desc`,
    [accountId],
  );
  return result.rows.map((row) => ({ period: row.period, jobs: Number(row.jobs), pages: Number(row.pages) }));
}
