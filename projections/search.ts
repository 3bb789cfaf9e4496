import type pg from 'pg';
import { inTransaction, type Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Search across an account's results (docs/search.md, ADR 0039). Two tables:
// - `search_jobs`, this projection's read model: the done jobs whose text is searchable, from
//   JobSucceeded until ResultExpired; rebuilt and verified from the log like every projection;
// - `search_lines`, the index of the machine's reading (lines, words, alternatives), written from
//   the job's stored page results by the export before it records JobSucceeded, and by reindexSearch
//   (src/use-cases/search.ts) (writeSearchLines); deleted with the job's files at expiry (deleteSearchLines).
// People's corrections are searched in `corrected_lines` (the corrections projection): a corrected
// line is found by its corrected text only. A hit needs its job in `search_jobs`, so an expired
// job's lines drop out with its ResultExpired even before their rows are gone.
export const searchProjection: Projection = {
  name: 'search',
  tables: ['search_jobs'],
  handles: ['JobSucceeded', 'ResultExpired'],
  apply: `
declare
  job uuid := substring(e.stream_id from 5)::uuid;
  account uuid;
begin
  if e.type = 'JobSucceeded' then
    select (q.data->>'accountId')::uuid into account from events q where q.stream_id = e.stream_id and q.stream_version = 1;
    insert into search_jobs (job_id, account_id, finished_at) values (job, account, (e.data->>'finishedAt')::timestamptz)
    on conflict (job_id) do nothing;
  else
    delete from search_jobs where job_id = job;
  end if;
end`,
};

/** A line to index: its place, its text and its words as the page result holds them. */
export interface SearchLineInput {
  page: number;
  lineId: string;
  text: string;
  words: SearchWord[];
}

export interface SearchWord {
  text: string;
  box: { x: number; y: number; width: number; height: number };
  confidence: number;
  alternatives?: { text: string; confidence: number }[];
}

/** Rows a statement inserts at most (PostgreSQL's 65 535 parameters, 7 a row). */
const INSERT_BATCH = 2000;

/** Replaces a job's indexed lines (idempotent: a retried export or a reindex writes the same rows). */
export async function writeSearchLines(pool: pg.Pool, jobId: string, accountId: string, lines: readonly SearchLineInput[]): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('delete from search_lines where job_id = $1', [jobId]);
    const lineIndex = new Map<number, number>();
    for (let from = 0; from < lines.length; from += INSERT_BATCH) {
      const batch = lines.slice(from, from + INSERT_BATCH);
      const values: unknown[] = [];
      const rows = batch.map((line) => {
        const index = lineIndex.get(line.page) ?? 0;
        lineIndex.set(line.page, index + 1);
        const alternatives = line.words.flatMap((word) => (word.alternatives ?? []).map((alternative) => alternative.text)).join(' ');
        values.push(jobId, accountId, line.page, index, line.lineId, line.text, JSON.stringify(line.words), alternatives);
        const n = values.length;
        return `($${n - 7}, $${n - 6}, $${n - 5}, $${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}::jsonb, $${n})`;
      });
      await client.query(
        `insert into search_lines (job_id, account_id, page_number, line_index, line_id, text, words, alternatives) values ${rows.join(', ')}`,
        values,
      );
    }
  });
}

/** Deletes a job's indexed lines (its results expired). */
export async function deleteSearchLines(db: Queryable, jobId: string): Promise<void> {
  await db.query('delete from search_lines where job_id = $1', [jobId]);
}

/** Done jobs still searchable (of one account, or all) whose lines are not indexed (after a rebuild from an older log, or a lost index). */
export async function readUnindexedSearchJobs(db: Queryable, limit: number, accountId: string | null = null): Promise<string[]> {
  const result = await db.query<{ job_id: string }>(
    `select j.job_id from search_jobs j
     where not exists (select 1 from search_lines l where l.job_id = j.job_id) and ($2::uuid is null or j.account_id = $2::uuid)
     order by j.finished_at, j.job_id limit $1`,
    [limit, accountId],
  );
  return result.rows.map((row) => row.job_id);
}

/** Searchable jobs (of one account, or all; one job, or all) after `afterJobId`, by job id: a page of `limit`. */
export async function readSearchJobs(
  db: Queryable,
  query: { accountId: string | null; jobId: string | null; afterJobId: string | null; limit: number },
): Promise<string[]> {
  const result = await db.query<{ job_id: string }>(
    `select job_id from search_jobs
     where ($1::uuid is null or account_id = $1::uuid) and ($2::uuid is null or job_id = $2::uuid) and ($3::uuid is null or job_id > $3::uuid)
     order by job_id limit $4`,
    [query.accountId, query.jobId, query.afterJobId, query.limit],
  );
  return result.rows.map((row) => row.job_id);
}

/** A digest of a job's indexed lines as stored (null: none), to tell whether a rewrite changed them. */
export async function searchLinesDigest(db: Queryable, jobId: string): Promise<string | null> {
  const result = await db.query<{ digest: string | null }>(
    `select md5(string_agg(concat_ws(E'\\t', account_id, page_number, line_index, line_id, text, words::text, alternatives), E'\\n'
       order by page_number, line_index)) as digest
     from search_lines where job_id = $1`,
    [jobId],
  );
  return result.rows[0]?.digest ?? null;
}

export interface SearchQuery {
  accountId: string;
  text: string;
  /** 0: the words as written (diacritics and case aside); 1, 2: ever looser trigram matches. */
  fuzzy: 0 | 1 | 2;
  jobId: string | null;
  limit: number;
  offset: number;
}

export interface SearchRow {
  job_id: string;
  page_number: number;
  line_index: number;
  line_id: string;
  text: string;
  words: SearchWord[];
  corrected: boolean;
  rank: number;
}

/** strict_word_similarity thresholds of the fuzzy levels (pg_trgm). */
export const FUZZY_THRESHOLDS = { 1: 0.5, 2: 0.35 } as const;

/**
 * The account's lines that match, best first (then by job, page, line): full-text search
 * (websearch syntax: "quoted phrases", or, -word) over the folded words and alternatives, or with
 * `fuzzy` pg_trgm's strict word similarity of the folded query to the folded line. A corrected
 * line matches by its corrected text only.
 */
export async function searchLines(pool: pg.Pool, query: SearchQuery): Promise<SearchRow[]> {
  const params = [query.accountId, query.text, query.jobId, query.limit, query.offset];
  const { fuzzy } = query;
  if (fuzzy === 0) {
    const sql = `
      with q as (select websearch_to_tsquery('simple', hwr_search_fold($2)) as query)
      select * from (
        select l.job_id, l.page_number, l.line_index, l.line_id, l.text, l.words, false as corrected,
          ts_rank('{0.05, 0.1, 0.2, 1.0}', l.tsv, q.query) as rank
        from q, search_lines l join search_jobs j on j.job_id = l.job_id
        where l.account_id = $1 and l.tsv @@ q.query and ($3::uuid is null or l.job_id = $3::uuid)
          and not exists (select 1 from corrected_lines c where c.job_id = l.job_id and c.page_number = l.page_number and c.line_id = l.line_id)
        union all
        select c.job_id, c.page_number, l.line_index, c.line_id, c.text, l.words, true,
          ts_rank(to_tsvector('simple', hwr_search_fold(c.text)), q.query)
        from q, corrected_lines c join search_jobs j on j.job_id = c.job_id
          join search_lines l on l.job_id = c.job_id and l.page_number = c.page_number and l.line_id = c.line_id
        where j.account_id = $1 and to_tsvector('simple', hwr_search_fold(c.text)) @@ q.query and ($3::uuid is null or c.job_id = $3::uuid)
      ) hits
      order by rank desc, job_id, page_number, line_index limit $4 offset $5`;
    return (await pool.query<SearchRow>(sql, params)).rows;
  }
  const sql = `
    with q as (select hwr_search_fold($2) as query)
    select * from (
      select l.job_id, l.page_number, l.line_index, l.line_id, l.text, l.words, false as corrected,
        strict_word_similarity(q.query, l.terms) as rank
      from q, search_lines l join search_jobs j on j.job_id = l.job_id
      where l.account_id = $1 and q.query <<% l.terms and ($3::uuid is null or l.job_id = $3::uuid)
        and not exists (select 1 from corrected_lines c where c.job_id = l.job_id and c.page_number = l.page_number and c.line_id = l.line_id)
      union all
      select c.job_id, c.page_number, l.line_index, c.line_id, c.text, l.words, true,
        strict_word_similarity(q.query, hwr_search_fold(c.text))
      from q, corrected_lines c join search_jobs j on j.job_id = c.job_id
        join search_lines l on l.job_id = c.job_id and l.page_number = c.page_number and l.line_id = c.line_id
      where j.account_id = $1 and q.query <<% hwr_search_fold(c.text) and ($3::uuid is null or c.job_id = $3::uuid)
    ) hits
    order by rank desc, job_id, page_number, line_index limit $4 offset $5`;
  return inTransaction(pool, async (client) => {
    await client.query("select set_config('pg_trgm.strict_word_similarity_threshold', $1, true)", [String(FUZZY_THRESHOLDS[fuzzy])]);
    return (await client.query<SearchRow>(sql, params)).rows;
  });
}
