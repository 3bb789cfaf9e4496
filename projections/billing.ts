import type { Queryable } from '../src/db/database.ts';
import { trainedLinesReport } from './models.ts';
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
  /** Pages whose correction was applied, over every tier. */
  corrected_pages: number;
  /** The same figures per billed tier (`none`, `cheap`, `balanced`, `best`): what an invoice prices. */
  tiers: Record<string, { jobs: number; pages: number; corrected_pages: number }>;
  /** Models whose training completed in the period (ready, or retired since); failed and cancelled trainings are not billed. */
  models_trained: number;
  /** The lines those models were trained on (`lines_train`, held-out lines not counted). */
  lines_trained: number;
}

/**
 * Billed pages per account, and per tier: done jobs only (failed and cancelled jobs have no billing
 * row); and the trained lines of the models that became ready in the period (the models read model,
 * ADR 0031). An account with trained models and no done job has a line with no jobs.
 */
export async function billingReport(
  db: Queryable,
  filter: { accountId?: string | null; from?: Date | null; to?: Date | null },
): Promise<BillingLine[]> {
  const result = await db.query<{ name: string; account_id: string; tier: string; jobs: string; pages: string; corrected_pages: string }>(
    `select a.name, b.account_id, b.tier, count(*) as jobs, sum(b.pages) as pages, sum(b.corrected_pages) as corrected_pages
     from billing b join accounts a using (account_id)
     where ($1::uuid is null or b.account_id = $1)
       and ($2::timestamptz is null or b.finished_at >= $2)
       and ($3::timestamptz is null or b.finished_at < $3)
     group by a.name, b.account_id, b.tier order by a.name, b.tier`,
    [filter.accountId ?? null, filter.from ?? null, filter.to ?? null],
  );
  const lines = new Map<string, BillingLine>();
  for (const row of result.rows) {
    let line = lines.get(row.account_id);
    if (!line) {
      line = emptyLine(row.name, row.account_id);
      lines.set(row.account_id, line);
    }
    const tier = { jobs: Number(row.jobs), pages: Number(row.pages), corrected_pages: Number(row.corrected_pages) };
    line.tiers[row.tier] = tier;
    line.jobs += tier.jobs;
    line.pages += tier.pages;
    line.corrected_pages += tier.corrected_pages;
  }
  let added = false;
  for (const trained of await trainedLinesReport(db, filter)) {
    let line = lines.get(trained.account_id);
    if (!line) {
      line = emptyLine(trained.account, trained.account_id);
      lines.set(trained.account_id, line);
      added = true;
    }
    line.models_trained = trained.models;
    line.lines_trained = trained.lines;
  }
  const report = [...lines.values()];
  // By account name, as the query orders the accounts with jobs.
  return added ? report.sort((a, b) => a.account.localeCompare(b.account)) : report;
}

function emptyLine(account: string, accountId: string): BillingLine {
  return { account, account_id: accountId, jobs: 0, pages: 0, corrected_pages: 0, tiers: {}, models_trained: 0, lines_trained: 0 };
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
