// CER before and after LLM correction, per page. `npm run eval -- --correction`
// (bench/eval-recognition.ts) calls `evaluateCorrection` with the pages it has just
// recognised; it can also be run on stored page results:
//
//   node bench/eval-correction.ts [--tier cheap|balanced|best] [--preset NAME] PAGE_RESULT.json...
//
// where each PAGE_RESULT.json is a PageResult whose image.name is NAME.jpg|png|tif of a page in
// ../shared/fixtures/pages (ground truth NAME.gt.txt next to it; override with --pages DIR).
// It calls the configured provider (GEMINI_API_KEY or OPENAI_BASE_URL, see docs/correction.md)
// and costs tokens, so it is documented, not run in CI. Without a provider it says so and stops.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { loadConfig, type Config } from '../src/platform/config.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { createCorrector } from '../src/recognition/correction/create-corrector.ts';
import { editDistance } from '../src/recognition/correction/edit-distance.ts';
import { normalizeLineText } from '../src/recognition/correction/guards.ts';
import { DEFAULT_PRESET, isPreset } from '../src/recognition/correction/presets.ts';
import { allLines, type PageResult } from '../src/recognition/page/page-result.ts';
import { LLM_TIERS, type LlmTier, type PageCorrector } from '../src/pipeline/pipeline.ts';
import { storedPageImage } from '../src/pipeline/stored-page-image.ts';

export interface CorrectionEvalPage {
  name: string;
  /** The page as recognised (not yet corrected). */
  page: PageResult;
  /** Ground-truth lines in reading order. */
  groundTruth: string[];
  /** The page image, for the `best` tier. */
  imagePath: string;
}

export interface CorrectionEvalRow {
  name: string;
  referenceChars: number;
  errorsBefore: number;
  errorsAfter: number;
  cerBefore: number;
  cerAfter: number;
  changedLines: number;
  refusedLines: number;
  inputTokens: number;
  outputTokens: number;
  ms: number;
  warnings: string[];
}

export interface CorrectionEvalResult {
  provider: string;
  model: string;
  tier: LlmTier;
  preset: string;
  rows: CorrectionEvalRow[];
  /** Character-weighted over all pages. */
  cerBefore: number;
  cerAfter: number;
}

export interface CorrectionEvalOptions {
  llmTier?: LlmTier;
  preset?: string;
  /** Default: loadConfig().correction. */
  config?: Config['correction'];
  /** Default: createCorrector(config). */
  corrector?: PageCorrector;
  log?: Logger;
  /**
   * Character errors of hypothesis lines against reference lines. Default: Levenshtein over
   * `scoringText` of both. bench/eval-recognition.ts may pass its own normalised scoring
   * (bench/lib/text-metrics.ts `scorePage(...).characters`) so that both reports agree.
   */
  score?: (hypothesisLines: string[], referenceLines: string[]) => CharacterErrors;
}

export interface CharacterErrors {
  errors: number;
  /** Reference length in characters. */
  length: number;
}

export function defaultScore(hypothesisLines: string[], referenceLines: string[]): CharacterErrors {
  const reference = scoringText(referenceLines);
  return { errors: editDistance(scoringText(hypothesisLines), reference), length: Array.from(reference).length };
}

/** Page text for scoring: lines with whitespace collapsed, joined by newlines. */
export function scoringText(lines: string[]): string {
  return lines
    .map(normalizeLineText)
    .filter((line) => line !== '')
    .join('\n');
}

/**
 * Corrects each page with the configured provider and scores it against its
 * ground truth before and after. Page-level CER (edit distance over the page
 * text), since recognised lines need not match ground-truth lines one to one.
 * Returns null when no provider is configured.
 */
export async function evaluateCorrection(
  pages: CorrectionEvalPage[],
  options: CorrectionEvalOptions = {},
): Promise<CorrectionEvalResult | null> {
  const config = options.config ?? loadConfig().correction;
  if (config.provider === null && !options.corrector) return null;
  const corrector = options.corrector ?? createCorrector(config);
  const tier = options.llmTier ?? 'balanced';
  const preset = options.preset ?? DEFAULT_PRESET;
  const log = options.log ?? createLogger('warn', { name: 'eval-correction', toStderr: true });
  const rows: CorrectionEvalRow[] = [];
  let provider = config.provider ?? 'custom';
  let model = '';
  const score = options.score ?? defaultScore;
  for (const entry of pages) {
    const before = score(
      allLines(entry.page).map((line) => line.text),
      entry.groundTruth,
    );
    const started = performance.now();
    const corrected = await corrector.correct(entry.page, {
      options: {
        llmTier: tier,
        preset,
        pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
        pdfFormat: 'none',
        webhookUrl: null,
      },
      pageImage: storedPageImage(new FilesystemBlobStore(path.dirname(entry.imagePath)), path.basename(entry.imagePath)),
      signal: AbortSignal.timeout(30 * 60_000),
      log,
    });
    const ms = performance.now() - started;
    const after = score(
      allLines(corrected).map((line) => line.text),
      entry.groundTruth,
    );
    const referenceChars = Math.max(1, before.length);
    const errorsBefore = before.errors;
    const errorsAfter = after.errors;
    provider = corrected.correction?.provider ?? provider;
    model = corrected.correction?.model ?? model;
    rows.push({
      name: entry.name,
      referenceChars,
      errorsBefore,
      errorsAfter,
      cerBefore: errorsBefore / referenceChars,
      cerAfter: errorsAfter / referenceChars,
      changedLines: allLines(corrected).filter((line) => line.recognizedText !== undefined && line.recognizedText !== line.text).length,
      refusedLines: corrected.correction?.refusedLines.length ?? 0,
      inputTokens: corrected.correction?.inputTokens ?? 0,
      outputTokens: corrected.correction?.outputTokens ?? 0,
      ms,
      warnings: corrected.warnings.slice(entry.page.warnings.length),
    });
  }
  const chars = rows.reduce((sum, row) => sum + row.referenceChars, 0);
  return {
    provider,
    model,
    tier,
    preset,
    rows,
    cerBefore: rows.reduce((sum, row) => sum + row.errorsBefore, 0) / Math.max(1, chars),
    cerAfter: rows.reduce((sum, row) => sum + row.errorsAfter, 0) / Math.max(1, chars),
  };
}

export function formatCorrectionReport(result: CorrectionEvalResult | null): string {
  if (result === null) return 'correction: skipped, no correction provider is configured (set GEMINI_API_KEY or OPENAI_BASE_URL)';
  const percent = (value: number) => `${(value * 100).toFixed(2)}%`;
  const header = `correction with ${result.provider} ${result.model} (tier ${result.tier}, preset ${result.preset})`;
  const columns = ['page', 'chars', 'CER before', 'CER after', 'changed', 'refused', 'tokens in/out', 'seconds'];
  const rows = result.rows.map((row) => [
    row.name,
    String(row.referenceChars),
    percent(row.cerBefore),
    percent(row.cerAfter),
    String(row.changedLines),
    String(row.refusedLines),
    `${row.inputTokens}/${row.outputTokens}`,
    (row.ms / 1000).toFixed(1),
  ]);
  const totals = [
    'all pages',
    String(result.rows.reduce((sum, row) => sum + row.referenceChars, 0)),
    percent(result.cerBefore),
    percent(result.cerAfter),
    String(result.rows.reduce((sum, row) => sum + row.changedLines, 0)),
    String(result.rows.reduce((sum, row) => sum + row.refusedLines, 0)),
    `${result.rows.reduce((sum, row) => sum + row.inputTokens, 0)}/${result.rows.reduce((sum, row) => sum + row.outputTokens, 0)}`,
    (result.rows.reduce((sum, row) => sum + row.ms, 0) / 1000).toFixed(1),
  ];
  const table = [columns, ...rows, totals];
  const widths = columns.map((_, index) => Math.max(...table.map((row) => row[index].length)));
  const lines = table.map((row) =>
    row.map((cell, index) => (index === 0 ? cell.padEnd(widths[index]) : cell.padStart(widths[index]))).join('  '),
  );
  const warnings = result.rows.flatMap((row) => row.warnings.map((warning) => `  ${row.name}: ${warning}`));
  return [header, ...lines, ...(warnings.length > 0 ? ['warnings:', ...warnings] : [])].join('\n');
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      tier: { type: 'string', default: 'balanced' },
      preset: { type: 'string', default: DEFAULT_PRESET },
      pages: { type: 'string', default: path.resolve(import.meta.dirname, '../../shared/fixtures/pages') },
    },
  });
  if (!(LLM_TIERS as readonly string[]).includes(values.tier) || !isPreset(values.preset) || positionals.length === 0) {
    process.stderr.write(
      'usage: node bench/eval-correction.ts [--tier cheap|balanced|best] [--preset NAME] [--pages DIR] PAGE_RESULT.json...\n',
    );
    return 2;
  }
  const pages: CorrectionEvalPage[] = [];
  for (const file of positionals) {
    const page = JSON.parse(await readFile(file, 'utf8')) as PageResult;
    const name = path.parse(page.image.name).name;
    const groundTruth = (await readFile(path.join(values.pages, `${name}.gt.txt`), 'utf8')).split('\n');
    pages.push({ name, page, groundTruth, imagePath: path.join(values.pages, page.image.name) });
  }
  console.log(formatCorrectionReport(await evaluateCorrection(pages, { llmTier: values.tier as LlmTier, preset: values.preset })));
  return 0;
}

if (import.meta.main) process.exitCode = await main();
