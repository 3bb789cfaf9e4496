// People's corrections of a done job's text (docs/corrections.md): a page's lines to read and
// correct (the machine's reading, the correction, the geometry), and a save of corrected lines as
// PageTextCorrected through the job's decider, whose reaction re-exports the archive (ADR 0032).
// Line ids are the result's PageXML/ALTO ids (src/export/export-page.ts gives them).
import type { CorrectionActor, EventMetadata } from '../../domain/events.ts';
import { Rejection } from '../../domain/rejections.ts';
import type { PageResult, Point } from '../recognition/page/page-result.ts';
import { readPageCorrections } from '../../projections/corrections.ts';
import { readJobPages, readJobStatus, type JobStatusRow } from '../../projections/job-status.ts';
import { listAccountKeys } from '../../projections/api-keys.ts';
import { findUser } from '../../projections/users.ts';
import { BlobNotFoundError, type BlobStore } from '../blobs/blob-store.ts';
import type { Database, Queryable } from '../db/database.ts';
import { type ExportPage, prepareExportPage } from '../export/export-page.ts';
import { readPageResult } from '../pipeline/page-result-reader.ts';
import type { CommandBus } from './command-bus.ts';
import { CorrectionError } from './errors.ts';

/** The longest text of one line, in characters (code points). */
export const MAX_LINE_TEXT_LENGTH = 2000;
/** Lines one save may change at most. */
export const MAX_LINES_PER_SAVE = 1000;
/** The longest line id a save may name. */
const MAX_LINE_ID_LENGTH = 200;

export interface CorrectionDeps {
  db: Database;
  bus: CommandBus;
  blobs: BlobStore;
}

/** Who asks: an API key, or a portal user (`actor` = `user:<id>`, keyId empty), as AuthContext has it. */
export interface Caller {
  accountId: string;
  keyId: string;
  actor?: string;
}

export interface PageLineView {
  id: string;
  region_id: string;
  polygon: Point[];
  baseline: Point[] | null;
  /** What the line reads now: the correction when there is one, else the machine's reading. */
  text: string;
  machine_text: string;
  corrected_text: string | null;
  /** The machine's confidence in its reading (0..1), null when it gave none. */
  confidence: number | null;
  /** The machine's words (empty where the recognizer read the line as a whole). */
  words: Array<{ id: string; text: string; polygon: Point[]; confidence: number | null }>;
  /**
   * Why the correction step's guard refused the language model's change to this line (its
   * recognised text was kept; docs/correction.md, "Guards"); null when no change was refused.
   */
  correction_refused: string | null;
}

export interface PageView {
  job_id: string;
  page: number;
  name: string;
  image: { width: number; height: number };
  /** The page's text version: the number of saves of its corrections (0: the machine's reading). */
  version: number;
  corrected_at: string | null;
  corrected_lines: number;
  /** The page's current text: its lines' texts, one a line, in reading order. */
  text: string;
  lines: PageLineView[];
}

/** A page of a done job of the account, as the machine read it, with its corrections. */
export async function readPageForCorrection(
  deps: Pick<CorrectionDeps, 'db' | 'blobs'>,
  caller: Caller,
  jobId: string | null,
  page: number,
): Promise<PageView> {
  const { job, page: loaded } = await loadPage(deps, caller.accountId, jobId, page);
  return pageView(deps.db.pool, job, page, loaded.name, loaded.export);
}

export interface CorrectionRequest {
  lines: Array<{ id: string; text: string }>;
  requestId?: string;
}

/**
 * Saves corrected lines of a page: checks each text (length, characters), then CorrectPageText on
 * the job's stream (unknown lines, an ended or expired job are the decider's refusals). Lines sent
 * with the text they have change nothing; a save that changes nothing records nothing. Answers
 * the page as it reads afterwards.
 */
export async function correctPageText(
  deps: CorrectionDeps,
  caller: Caller,
  jobId: string | null,
  page: number,
  request: CorrectionRequest,
): Promise<PageView> {
  for (const line of request.lines) checkLineText(line.id, line.text);
  const { job, page: loaded } = await loadPage(deps, caller.accountId, jobId, page);
  const machineText = Object.fromEntries(allExportLines(loaded.export).map((line) => [line.id, line.text]));
  const actor = await correctionActor(deps.db.pool, caller);
  const metadata: EventMetadata = { actor: caller.actor ?? caller.keyId, requestId: request.requestId };
  await deps.bus.job(job.job_id, { type: 'CorrectPageText', page, lines: request.lines, machineText, actor, now: new Date() }, metadata);
  return pageView(deps.db.pool, job, page, loaded.name, loaded.export);
}

/**
 * The body of a save, checked: `{"lines": [{"id": "…", "text": "…"}, …]}`, 1 to 1,000 lines,
 * each id once, no other fields. CorrectionError invalid_correction_body otherwise.
 */
export function parseCorrectionBody(body: unknown): Array<{ id: string; text: string }> {
  const refuse = (why: string): never => {
    throw new CorrectionError('invalid_correction_body', `The body must be {"lines": [{"id": LINE_ID, "text": "…"}, …]}: ${why}.`);
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) refuse('it is not a JSON object');
  const fields = Object.keys(body as object);
  const unknown = fields.filter((field) => field !== 'lines');
  if (unknown.length > 0) refuse(`unknown field ${unknown.map((field) => JSON.stringify(field)).join(', ')}`);
  const lines = (body as { lines?: unknown }).lines;
  if (!Array.isArray(lines)) refuse('lines is missing or not an array');
  const list = lines as unknown[];
  if (list.length === 0) refuse('lines is empty');
  if (list.length > MAX_LINES_PER_SAVE) refuse(`at most ${MAX_LINES_PER_SAVE} lines in one save`);
  const seen = new Set<string>();
  return list.map((entry, index) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) refuse(`lines[${index}] is not an object`);
    const { id, text, ...rest } = entry as { id?: unknown; text?: unknown };
    if (Object.keys(rest).length > 0) refuse(`lines[${index}] has unknown field ${JSON.stringify(Object.keys(rest)[0])}`);
    if (typeof id !== 'string' || id === '' || id.length > MAX_LINE_ID_LENGTH) refuse(`lines[${index}].id must be a line id`);
    if (typeof text !== 'string') refuse(`lines[${index}].text must be a string`);
    if (seen.has(id as string)) refuse(`line ${JSON.stringify(id)} is given twice`);
    seen.add(id as string);
    return { id: id as string, text: text as string };
  });
}

// Control characters (tabs and line breaks included: a line is one line), lone surrogates, and the
// two noncharacters XML cannot carry.
const INVALID_CHARACTERS = /[\p{Cc}\p{Cs}\u2028\u2029\uFFFE\uFFFF]/u;

function checkLineText(id: string, text: string): void {
  const length = [...text].length;
  if (length > MAX_LINE_TEXT_LENGTH)
    throw new CorrectionError(
      'line_text_too_long',
      `Line ${JSON.stringify(id)}: ${length} characters; a line holds at most ${MAX_LINE_TEXT_LENGTH}.`,
    );
  const bad = INVALID_CHARACTERS.exec(text);
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new CorrectionError(
      'line_text_invalid_characters',
      `Line ${JSON.stringify(id)}: U+${code} cannot be in a line's text (no control characters, tabs or line breaks).`,
    );
  }
}

/** Who a correction is by, in a customer's words: the key's label or the user's e-mail. */
export async function correctionActor(db: Queryable, caller: Caller): Promise<CorrectionActor> {
  const userId = caller.actor?.startsWith('user:') ? caller.actor.slice('user:'.length) : null;
  if (userId) {
    const user = await findUser(db, userId);
    return { kind: 'user', userId, email: user?.email ?? userId };
  }
  const key = (await listAccountKeys(db, caller.accountId)).find((row) => row.key_id === caller.keyId);
  return { kind: 'api_key', keyId: caller.keyId, label: key?.label ?? caller.keyId };
}

/**
 * The account's done job whose result has not expired. Rejection job_not_found (another
 * account's job too); a job not done: job_not_done (queued, processing), job_cancelled,
 * CorrectionError job_failed; past expires_at: result_expired.
 */
export async function doneJobOf(db: Queryable, accountId: string, jobId: string | null): Promise<JobStatusRow> {
  const job = jobId ? await readJobStatus(db, jobId, accountId) : undefined;
  if (!job) throw new Rejection('job_not_found', `No job ${jobId ?? ''}.`);
  if (job.state === 'failed')
    throw new CorrectionError('job_failed', `The job failed and has no text: ${job.error_message ?? 'no reason recorded'}`);
  if (job.state === 'cancelled') throw new Rejection('job_cancelled', 'The job was cancelled and has no text.');
  if (job.state !== 'done') throw new Rejection('job_not_done', `The job is ${job.state}; its pages can be read once it is done.`);
  if (job.result_expired || Date.now() >= job.expires_at.getTime()) throw resultExpired(job);
  return job;
}

export interface StoredPage {
  name: string;
  /** Where the page image is stored. */
  imageKey: string;
  result: PageResult;
  /** The export view of the machine's reading: line ids as in PageXML/ALTO. */
  export: ExportPage;
}

/** A page of a done job, from its stored result; unknown_page; result_expired when its files are gone. */
export async function storedPageOf(deps: Pick<CorrectionDeps, 'db' | 'blobs'>, job: JobStatusRow, page: number): Promise<StoredPage> {
  if (!Number.isSafeInteger(page) || page < 1 || page > job.page_count) throw new Rejection('unknown_page', `The job has no page ${page}.`);
  const row = (await readJobPages(deps.db.pool, job.job_id)).find((candidate) => candidate.page_number === page);
  if (!row?.result_key) throw resultExpired(job);
  try {
    const result = await readPageResult(deps.blobs, row.result_key, page);
    return { name: row.name, imageKey: row.blob_key, result, export: prepareExportPage(result) };
  } catch (error) {
    if ((error as { code?: string }).code === 'page_result_missing' || error instanceof BlobNotFoundError) throw resultExpired(job);
    throw error;
  }
}

function resultExpired(job: JobStatusRow): CorrectionError {
  return new CorrectionError('result_expired', `The result was available until ${job.expires_at.toISOString()}.`);
}

async function loadPage(
  deps: Pick<CorrectionDeps, 'db' | 'blobs'>,
  accountId: string,
  jobId: string | null,
  page: number,
): Promise<{ job: JobStatusRow; page: StoredPage }> {
  const job = await doneJobOf(deps.db.pool, accountId, jobId);
  return { job, page: await storedPageOf(deps, job, page) };
}

function allExportLines(page: ExportPage) {
  return page.regions.flatMap((region) => region.lines.map((line) => ({ ...line, regionId: region.id })));
}

/**
 * The correction guard's refusals of the page (its result's `correction.refusedLines`, by the
 * result's line ids) by export line id: the export keeps the lines' order, not always their ids.
 */
function refusedByExportLine(exported: ExportPage): Map<string, string> {
  const reasons = new Map((exported.result.correction?.refusedLines ?? []).map((line) => [line.id, line.reason] as const));
  const byExportId = new Map<string, string>();
  if (reasons.size === 0) return byExportId;
  exported.result.regions.forEach((region, regionIndex) =>
    region.lines.forEach((line, lineIndex) => {
      const reason = reasons.get(line.id);
      const exportId = exported.regions[regionIndex]?.lines[lineIndex]?.id;
      if (reason !== undefined && exportId !== undefined) byExportId.set(exportId, reason);
    }),
  );
  return byExportId;
}

async function pageView(db: Queryable, job: JobStatusRow, page: number, name: string, exported: ExportPage): Promise<PageView> {
  const corrections = await readPageCorrections(db, job.job_id, page);
  const refused = refusedByExportLine(exported);
  const lines = allExportLines(exported).map((line): PageLineView => {
    const corrected = corrections.lines.get(line.id) ?? null;
    return {
      id: line.id,
      region_id: line.regionId,
      polygon: line.polygon,
      baseline: line.baseline,
      text: corrected ?? line.text,
      machine_text: line.text,
      corrected_text: corrected,
      confidence: line.confidence,
      words: line.wordsEstimated
        ? []
        : line.words.map((word) => ({ id: word.id, text: word.text, polygon: word.polygon, confidence: word.confidence })),
      correction_refused: refused.get(line.id) ?? null,
    };
  });
  return {
    job_id: job.job_id,
    page,
    name,
    image: { width: exported.width, height: exported.height },
    version: corrections.version,
    corrected_at: corrections.correctedAt?.toISOString() ?? null,
    corrected_lines: lines.filter((line) => line.corrected_text !== null && line.corrected_text !== line.machine_text).length,
    text: lines.map((line) => line.text).join('\n'),
    lines,
  };
}
