// `npm run eval`: CER and WER per page and overall (handwritten and printed apart) of our
// pipeline and, in the same run, of tesseract, on ../shared/fixtures/pages against the
// .gt.txt files, after the normalisation in bench/lib/text-metrics.ts.
//
//   node bench/eval-recognition.ts [--pages DIR] [--no-tesseract] [--correction] [--save DIR]
//
// --correction  also corrects the recognised pages with the configured LLM provider and
//               reports CER before and after (bench/eval-correction.ts)
// --save DIR    writes each recognised page result as DIR/NAME.json
// Models: the built-in PP-OCRv4, or MODEL_DIR. Needs ../shared (CI has it).
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { allLines, type PageResult } from '../src/pipeline/page-result.ts';
import { recognizePage } from '../src/pipeline/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { DEFAULT_PAGES_DIR, listFixturePages, type FixturePage, type PageKind } from './lib/fixture-pages.ts';
import { matchLines, readingOrderAgreement } from './lib/layout-metrics.ts';
import { errorRate, scorePage, type ErrorCount } from './lib/text-metrics.ts';
import { pageResultFromGroundTruth } from '../test/support/page-result-from-ground-truth.ts';
import { markdownTable, percent } from './lib/table.ts';
import { runTesseract, tesseractVersion } from './lib/tesseract.ts';

interface Scores {
  characters: ErrorCount;
  words: ErrorCount;
  lines: number;
}

interface Layout {
  /** Ground-truth lines that some recognised line overlaps. */
  found: number;
  /** Pairwise agreement of our reading order with the ground truth's (1: same order). */
  order: number;
}

interface PageRow {
  page: FixturePage;
  layout: Layout;
  ours: Scores;
  tesseract: Scores | null;
  result: PageResult;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      pages: { type: 'string', default: DEFAULT_PAGES_DIR },
      'no-tesseract': { type: 'boolean', default: false },
      correction: { type: 'boolean', default: false },
      save: { type: 'string' },
    },
  });
  const pages = listFixturePages(values.pages);
  const config = loadConfig();
  const engine = await sharedEngine(config.recognition);
  const tesseract = values['no-tesseract'] ? null : await tesseractVersion();
  console.log(`# recognition accuracy on ${pages.length} pages (${values.pages})`);
  console.log(`ours: ${engine.spec.name} ${engine.spec.version}; peer: ${tesseract ?? 'tesseract not run'}`);
  console.log('CER/WER after normalisation (bench/lib/text-metrics.ts), page text = lines in reading order');
  console.log('GT found: ground-truth lines some recognised line overlaps; order: pairwise reading-order agreement with the ground truth (1 = same)\n');

  const rows: PageRow[] = [];
  try {
    for (const page of pages) {
      const { page: result } = await recognizePage(engine, await readFile(page.imagePath), {
        name: path.basename(page.imagePath),
        pageNumber: rows.length + 1,
        maxPixels: config.limits.maxImagePixels,
        recognize: true,
      });
      const ourLines = allLines(result).map((line) => line.text);
      const ours = { ...scorePage(ourLines, page.groundTruth), lines: ourLines.length };
      const truth = allLines(await pageResultFromGroundTruth({ imagePath: page.imagePath, xmlPath: page.xmlPath }));
      const matches = matchLines(result, truth);
      const layout = { found: new Set(matches.filter((index) => index >= 0)).size, order: readingOrderAgreement(matches) };
      let peer: Scores | null = null;
      if (tesseract) {
        const run = await runTesseract(page.imagePath, page.language);
        peer = { ...scorePage(run.lines, page.groundTruth), lines: run.lines.length };
      }
      rows.push({ page, layout, ours, tesseract: peer, result });
      if (values.save) {
        await mkdir(values.save, { recursive: true });
        await writeFile(path.join(values.save, `${page.name}.json`), JSON.stringify(result, null, 1));
      }
      process.stderr.write(`  ${page.name}: CER ${percent(errorRate(ours.characters))}${peer ? ` (tesseract ${percent(errorRate(peer.characters))})` : ''}\n`);
    }
  } finally {
    await closeSharedEngines();
  }

  console.log(pageTable(rows));
  console.log('');
  console.log(summaryTable(rows));

  if (values.correction) await evaluateCorrectionHook(rows);
  return 0;
}

function pageTable(rows: PageRow[]): string {
  return markdownTable(
    ['page', 'kind', 'lang', 'GT lines', 'our lines', 'GT found', 'order', 'tess. lines', 'chars', 'CER ours', 'CER tess.', 'WER ours', 'WER tess.'],
    rows.map(({ page, layout, ours, tesseract }) => [
      page.name,
      page.kind,
      page.language,
      String(page.groundTruth.length),
      String(ours.lines),
      String(layout.found),
      layout.order.toFixed(3),
      tesseract ? String(tesseract.lines) : 'n/a',
      String(ours.characters.length),
      percent(errorRate(ours.characters)),
      tesseract ? percent(errorRate(tesseract.characters)) : 'n/a',
      percent(errorRate(ours.words)),
      tesseract ? percent(errorRate(tesseract.words)) : 'n/a',
    ]),
  );
}

function summaryTable(rows: PageRow[]): string {
  const groups: [string, PageRow[]][] = [
    ...(['handwritten', 'printed'] as PageKind[]).map((kind): [string, PageRow[]] => [kind, rows.filter((row) => row.page.kind === kind)]),
    ['all pages', rows],
  ];
  return markdownTable(
    ['overall (character-weighted)', 'pages', 'chars', 'CER ours', 'CER tess.', 'WER ours', 'WER tess.'],
    groups
      .filter(([, group]) => group.length > 0)
      .map(([label, group]) => {
        const peer = group.every((row) => row.tesseract !== null);
        return [
          label,
          String(group.length),
          String(group.reduce((sum, row) => sum + row.ours.characters.length, 0)),
          percent(errorRate(...group.map((row) => row.ours.characters))),
          peer ? percent(errorRate(...group.map((row) => row.tesseract!.characters))) : 'n/a',
          percent(errorRate(...group.map((row) => row.ours.words))),
          peer ? percent(errorRate(...group.map((row) => row.tesseract!.words))) : 'n/a',
        ];
      }),
  );
}

/** Hands the recognised pages to the correction evaluation (bench/eval-correction.ts) and prints its report. */
async function evaluateCorrectionHook(rows: PageRow[]): Promise<void> {
  const module = path.join(import.meta.dirname, 'eval-correction.ts');
  if (!existsSync(module)) {
    console.log('\ncorrection: bench/eval-correction.ts is not there');
    return;
  }
  const { evaluateCorrection, formatCorrectionReport } = await import(pathToFileURL(module).href);
  const result = await evaluateCorrection(rows.map((row) => ({ name: row.page.name, page: row.result, groundTruth: row.page.groundTruth, imagePath: row.page.imagePath })));
  console.log(`\n${formatCorrectionReport(result)}`);
}

if (import.meta.main) process.exitCode = await main();
