// Search across an account's results (docs/search.md, ADR 0039): the index written from a done
// job's stored page results (indexJobText, called by the export before JobSucceeded and by
// reindexSearch), and the query the API and the CLI answer (searchAccount).
import {
  readSearchJobs,
  readUnindexedSearchJobs,
  searchLinesDigest,
  searchLines,
  writeSearchLines,
  type SearchLineInput,
  type SearchRow,
  type SearchWord,
} from '../../projections/search.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Database } from '../db/database.ts';
import { prepareExportPage } from '../export/export-page.ts';
import { readPageResult } from '../pipeline/page-result-reader.ts';
import type { PageResult } from '../recognition/page/page-result.ts';
import type { CommandBus } from './command-bus.ts';
import { isUuid } from '../shared/uuid.ts';

/** The lines a page result gives the index, with the ids its PageXML/ALTO and the corrections use. */
export function searchLinesOf(page: PageResult): SearchLineInput[] {
  const exported = prepareExportPage(page);
  return exported.regions.flatMap((region) =>
    region.lines
      .filter((line) => line.text.trim() !== '')
      .map((line) => ({
        page: page.pageNumber,
        lineId: line.id,
        text: line.text,
        words: line.words.map(
          (word): SearchWord => ({
            text: word.text,
            box: word.box,
            confidence: word.confidence ?? 0,
            ...(word.alternatives ? { alternatives: word.alternatives } : {}),
          }),
        ),
      })),
  );
}

/** Reads a job's page results from the store and replaces its indexed lines. */
export async function indexJobText(
  deps: { db: Database; blobs: BlobStore },
  job: { jobId: string; accountId: string; pages: readonly { pageNumber: number; resultKey: string | undefined }[] },
): Promise<number> {
  const lines: SearchLineInput[] = [];
  for (const { pageNumber, resultKey } of job.pages) {
    if (!resultKey) continue;
    lines.push(...searchLinesOf(await readPageResult(deps.blobs, resultKey, pageNumber)));
  }
  await writeSearchLines(deps.db.pool, job.jobId, job.accountId, lines);
  return lines.length;
}

/** What reindexSearch does: which jobs, and whether their lines are rewritten when they have some. */
export interface ReindexOptions {
  /** Every searchable job's lines are read again from its stored page results and rewritten (default: only jobs without lines). */
  all?: boolean;
  /** Only this job (rewritten whether it has lines or not). */
  jobId?: string | null;
  /** Only this account's jobs. */
  accountId?: string | null;
}

export interface ReindexedJob {
  jobId: string;
  lines: number;
  /** Whether the rows written differ from those there before (none before counts as a change where the job has lines). */
  changed: boolean;
}

/**
 * Writes the index rows of searchable jobs from their stored page results: by default the jobs
 * that have none (after a rebuild, a restore or an upgrade); with `all` or `jobId` the jobs named,
 * whatever rows they have (rows deleted, altered or written by an older version); an operator's
 * command (`hwr projections reindex-search`, docs/search.md).
 */
export async function reindexSearch(
  deps: { db: Database; blobs: BlobStore; bus: CommandBus },
  options: ReindexOptions = {},
): Promise<ReindexedJob[]> {
  const done: ReindexedJob[] = [];
  const reindex = async (jobId: string) => {
    const before = await searchLinesDigest(deps.db.pool, jobId);
    const state = await deps.bus.loadJob(deps.db.pool, jobId);
    const pages = state.pages.map((source) => ({ pageNumber: source.pageNumber, resultKey: state.completedPages[source.pageNumber] }));
    const lines = await indexJobText(deps, { jobId, accountId: state.accountId, pages });
    done.push({ jobId, lines, changed: (await searchLinesDigest(deps.db.pool, jobId)) !== before });
  };
  const accountId = options.accountId ?? null;
  if (options.all || options.jobId) {
    for (let after: string | null = null; ; ) {
      const due = await readSearchJobs(deps.db.pool, { accountId, jobId: options.jobId ?? null, afterJobId: after, limit: 100 });
      if (due.length === 0) return done;
      for (const jobId of due) await reindex(jobId);
      after = due[due.length - 1];
    }
  }
  const seen = new Set<string>();
  for (;;) {
    // A job whose results give no line stays without rows: seen once, not again.
    const due = (await readUnindexedSearchJobs(deps.db.pool, 100 + seen.size, accountId)).filter((jobId) => !seen.has(jobId));
    if (due.length === 0) return done;
    for (const jobId of due) {
      seen.add(jobId);
      await reindex(jobId);
    }
  }
}

export interface SearchParams {
  q: string;
  fuzzy: 0 | 1 | 2;
  jobId: string | null;
  limit: number;
  cursor: string | null;
}

export interface SearchHit {
  job_id: string;
  page: number;
  line_id: string;
  /** The line as it reads now (a person's correction where there is one). */
  text: string;
  /** `text`, HTML-escaped, with the matched words between <mark> and </mark>. */
  highlight: string;
  corrected: boolean;
  /** The matched word of the machine's reading (null where none is, e.g. a corrected line's new words). */
  word: {
    text: string;
    box: { x: number; y: number; width: number; height: number };
    confidence: number;
    /** Set when the word was found through one of its alternative readings. */
    alternative: { text: string; confidence: number } | null;
  } | null;
  score: number;
  page_url: string;
}

export interface SearchAnswer {
  query: string;
  fuzzy: number;
  hits: SearchHit[];
  next_cursor: string | null;
}

export const MAX_SEARCH_LIMIT = 100;
export const MAX_QUERY_LENGTH = 200;

/** A search's parameters that cannot be answered; its message says which and why. */
export class SearchRequestError extends Error {}

/**
 * A search's parameters as a request gives them (absent: undefined), checked: q required, at most
 * MAX_QUERY_LENGTH characters and no control characters; fuzzy 0, 1 or 2 (default 0); job_id a
 * UUID; limit 1 to MAX_SEARCH_LIMIT (default 20); cursor one searchAccount gave. The API and the
 * portal ask the same questions.
 */
export function searchParamsOf(given: { q?: string; fuzzy?: string; job_id?: string; limit?: string; cursor?: string }): SearchParams {
  const q = (given.q ?? '').trim();
  if (q === '') throw new SearchRequestError('q (the words to find) is required.');
  if ([...q].length > MAX_QUERY_LENGTH) throw new SearchRequestError(`q is longer than ${MAX_QUERY_LENGTH} characters.`);
  if (/[\u0000-\u001f\u007f]/.test(q)) throw new SearchRequestError('q has control characters.');
  const fuzzy = given.fuzzy ?? '0';
  if (fuzzy !== '0' && fuzzy !== '1' && fuzzy !== '2') throw new SearchRequestError('fuzzy must be 0, 1 or 2.');
  const jobId = given.job_id ?? null;
  if (jobId !== null && !isUuid(jobId)) throw new SearchRequestError('job_id must be a job id (a UUID).');
  const limitText = given.limit ?? '20';
  const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_SEARCH_LIMIT)) throw new SearchRequestError(`limit must be 1 to ${MAX_SEARCH_LIMIT}.`);
  const cursor = given.cursor ?? null;
  if (cursor !== null && !validCursor(cursor)) throw new SearchRequestError('cursor is not one this API gave.');
  return { q, fuzzy: Number(fuzzy) as 0 | 1 | 2, jobId: jobId?.toLowerCase() ?? null, limit, cursor };
}

/** The account's hits for the query, best first, a page of `limit` at a time. */
export async function searchAccount(db: Database, accountId: string, params: SearchParams): Promise<SearchAnswer> {
  const offset = params.cursor ? decodeCursor(params.cursor) : 0;
  const rows = await searchLines(db.pool, {
    accountId,
    text: params.q,
    fuzzy: params.fuzzy,
    jobId: params.jobId,
    limit: params.limit + 1,
    offset,
  });
  const more = rows.length > params.limit;
  const matches = searchMatcher(params.q, params.fuzzy);
  return {
    query: params.q,
    fuzzy: params.fuzzy,
    hits: rows.slice(0, params.limit).map((row) => hitOf(row, matches)),
    next_cursor: more ? encodeCursor(offset + params.limit) : null,
  };
}

/** Whether a cursor is one this API gave. */
function validCursor(cursor: string): boolean {
  return decodeCursor(cursor) >= 0;
}

function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
}

function decodeCursor(cursor: string): number {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown };
    return typeof value.o === 'number' && Number.isInteger(value.o) && value.o >= 0 && value.o <= 100_000 ? value.o : -1;
  } catch {
    return -1;
  }
}

/**
 * Text as the index compares it, close to PostgreSQL's unaccent + lower: letters without their
 * marks, the ligatures and long s its rules spell out, lower case.
 */
export function foldText(text: string): string {
  return text
    .replace(/ß/g, 'ss')
    .replace(/ẞ/g, 'SS')
    .replace(/[ſ]/g, 's')
    .replace(/æ/g, 'ae')
    .replace(/Æ/g, 'AE')
    .replace(/œ/g, 'oe')
    .replace(/Œ/g, 'OE')
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase();
}

/** The query's words (operators and quotes aside), folded. */
function queryTokens(q: string): string[] {
  return foldText(q)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((token) => token !== '' && token !== 'or');
}

const bare = (text: string): string => foldText(text).replace(/[^\p{L}\p{N}]+/gu, '');

/**
 * Whether a word of a line is one the query asks for: one of the query's words (operators and
 * quotes aside), diacritics and case ignored; with `fuzzy`, within a few letters of one. How the
 * API's hits, the portal's results and its viewer mark the words that matched.
 */
export function searchMatcher(q: string, fuzzy: number): (word: string) => boolean {
  const tokens = queryTokens(q);
  return (text: string): boolean => {
    const word = bare(text);
    if (word === '') return false;
    return tokens.some(
      (token) => token === word || (fuzzy > 0 && editDistance(token, word) <= Math.max(1, Math.floor(token.length / 3)) + fuzzy - 1),
    );
  };
}

function hitOf(row: SearchRow, close: (word: string) => boolean): SearchHit {
  let word: SearchHit['word'] = null;
  if (!row.corrected) {
    for (const candidate of row.words) {
      if (close(candidate.text)) {
        word = { text: candidate.text, box: candidate.box, confidence: candidate.confidence, alternative: null };
        break;
      }
    }
    if (!word) {
      for (const candidate of row.words) {
        const alternative = candidate.alternatives?.find((other) => close(other.text));
        if (alternative) {
          word = { text: candidate.text, box: candidate.box, confidence: candidate.confidence, alternative };
          break;
        }
      }
    }
  } else {
    const candidate = row.words.find((machine) => close(machine.text));
    if (candidate) word = { text: candidate.text, box: candidate.box, confidence: candidate.confidence, alternative: null };
  }
  return {
    job_id: row.job_id,
    page: row.page_number,
    line_id: row.line_id,
    text: row.text,
    highlight: highlightText(row.text, close),
    corrected: row.corrected,
    word,
    score: Math.round(Number(row.rank) * 10000) / 10000,
    page_url: `/v1/process-scan/${row.job_id}/pages/${row.page_number}`,
  };
}

/** `text`, HTML-escaped, with the words `matches` accepts between <mark> and </mark>. */
export function highlightText(text: string, matches: (word: string) => boolean): string {
  return text
    .split(/(\s+)/)
    .map((part) => (part.trim() !== '' && matches(part) ? `<mark>${escapeHtml(part)}</mark>` : escapeHtml(part)))
    .join('');
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function editDistance(a: string, b: string): number {
  const previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    let diagonal = previous[0];
    previous[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const above = previous[j];
      previous[j] = Math.min(previous[j] + 1, previous[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return previous[b.length];
}
