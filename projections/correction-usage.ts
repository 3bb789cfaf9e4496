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
