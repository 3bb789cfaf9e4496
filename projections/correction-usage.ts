import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Tokens and model of each corrected page, by account: usage reports (GET /v1/usage).
// Every corrected page counts, whatever the job's outcome: the provider was called.
export const correctionUsageProjection: Projection = {
  name: 'correction_usage',
  tables: ['correction_usage'],
  handles: ['PageCompleted'],
  apply: `
declare
  account uuid;
begin
  if e.data->'correction' <> 'null'::jsonb then
    select (q.data->>'accountId')::uuid into account from events q where q.stream_id = e.stream_id and q.stream_version = 1;
    insert into correction_usage (job_id, page_number, account_id, provider, model, input_tokens, output_tokens, recorded_at)
    values (substring(e.stream_id from 5)::uuid, (e.data->>'page')::int, account,
      e.data->'correction'->>'provider', e.data->'correction'->>'model',
      (e.data->'correction'->>'inputTokens')::int, (e.data->'correction'->>'outputTokens')::int, e.recorded_at);
  end if;
end`,
};

// Reads of this read model: GET /v1/usage and the portal's usage page.

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
