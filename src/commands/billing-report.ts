import type { Queryable } from '../db/database.ts';

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

export interface CorrectionUsageLine {
  provider: string;
  model: string;
  pages: number;
  input_tokens: number;
  output_tokens: number;
}

/** LLM correction usage of one account per provider and model (pages corrected, tokens). */
export async function correctionUsageReport(
  db: Queryable,
  filter: { accountId: string; from?: Date | null; to?: Date | null },
): Promise<CorrectionUsageLine[]> {
  const result = await db.query<{ provider: string; model: string; pages: string; input_tokens: string; output_tokens: string }>(
    `select provider, model, count(*) as pages, sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens
     from correction_usage
     where account_id = $1
       and ($2::timestamptz is null or recorded_at >= $2)
       and ($3::timestamptz is null or recorded_at < $3)
     group by provider, model order by provider, model`,
    [filter.accountId, filter.from ?? null, filter.to ?? null],
  );
  return result.rows.map((row) => ({
    provider: row.provider,
    model: row.model,
    pages: Number(row.pages),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
  }));
}
