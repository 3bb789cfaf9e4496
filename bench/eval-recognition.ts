// `npm run eval`: CER and WER per page and overall (handwritten and printed apart), and
// seconds per page, on ../shared/fixtures/pages against the .gt.txt files (normalised as in
// bench/lib/text-metrics.ts), in one run for:
//   - ours: the configured setup (MODEL_DIR, else the default: our handwriting recognizer with
//     PP-OCRv4 screening, models/default) with the configured decoder (RECOGNITION_DECODER);
//   - ours with greedy decoding, when the setup decodes with beam search (the LM's effect);
//   - ours on the lines of the PP-OCRv4 detector and our line grouping, when ours has a line
//     segmenter (the layout before it);
//   - PP-OCRv4 alone (the built-in model, the default before issue 7), unless ours is it;
//   - tesseract (the page's language), run as at scale: one single-threaded process per page
//     (OMP_THREAD_LIMIT=1), as many at once as cores, all pages before ours; its s/page is that
//     pool's wall time over the pages (1 / its throughput), the same figure in every row.
// The per-page table shows ours against tesseract and PP-OCRv4; layout columns are ours.
//
//   node bench/eval-recognition.ts [--pages DIR] [--no-tesseract] [--no-peers] [--correction] [--save DIR]
//
// --no-peers    ours only (no greedy run, no PP-OCRv4 alone, no tesseract)
// --correction  also corrects our recognised pages with the configured LLM provider and
//               reports CER before and after (bench/eval-correction.ts)
// --save DIR    writes each of our recognised page results as DIR/NAME.json
// Seconds per page include image decoding, layout and recognition (models loaded before).
// Needs ../shared (CI has it).
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/platform/config.ts';
import { defaultModelSpec } from '../src/recognition/models/default-model.ts';
import { builtinModelSpec, loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import { OcrEngine } from '../src/recognition/engine/ocr-engine.ts';
import { allLines, type PageResult } from '../src/recognition/page/page-result.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { DEFAULT_PAGES_DIR, listFixturePages, type FixturePage, type PageKind } from './lib/fixture-pages.ts';
import { matchLines, readingOrderAgreement } from './lib/layout-metrics.ts';
import { errorRate, scorePage, type ErrorCount } from './lib/text-metrics.ts';
import { pageResultFromGroundTruth } from '../test/support/page-result-from-ground-truth.ts';
import { markdownTable, percent } from './lib/table.ts';
import { runTesseractPool, tesseractVersion } from './lib/tesseract.ts';

interface Scores {
  characters: ErrorCount;
  words: ErrorCount;
  lines: number;
  ms: number;
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
  /** Scores per setup label, ours first. */
  scores: Map<string, Scores>;
  result: PageResult;
}

/** One way of reading a page: our engine with some models and decoder, or tesseract. */
interface Setup {
  label: string;
  describe: string;
  read(page: FixturePage, pageNumber: number): Promise<{ lines: string[]; ms: number; result?: PageResult }>;
  close(): Promise<void>;
}

const OURS = 'ours';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      pages: { type: 'string', default: DEFAULT_PAGES_DIR },
      'no-tesseract': { type: 'boolean', default: false },
      'no-peers': { type: 'boolean', default: false },
      correction: { type: 'boolean', default: false },
      save: { type: 'string' },
    },
  });
  const pages = listFixturePages(values.pages);
  const config = loadConfig();
  const settings = { threads: config.recognition.threads, concurrency: config.recognition.concurrency };
  const spec = config.recognition.modelDir ? loadModelSpec(config.recognition.modelDir) : defaultModelSpec();
  const engineSetup = async (label: string, engine: OcrEngine): Promise<Setup> => ({
    label,
    describe: `${engine.spec.name} ${engine.spec.version}: ${engine.models
      .filter((model) => model.role === 'recognition')
      .map((model) => model.name)
      .join(' + ')}; decoding ${engine.decoders.main}`,
    async read(page, pageNumber) {
      const started = performance.now();
      const { page: result } = await recognizePage(engine, await readFile(page.imagePath), {
        name: path.basename(page.imagePath),
        pageNumber,
        maxPixels: config.limits.maxImagePixels,
        recognize: true,
      });
      return { lines: allLines(result).map((line) => line.text), ms: performance.now() - started, result };
    },
    close: () => engine.close(),
  });

  const setups: Setup[] = [];
  try {
    const ours = await OcrEngine.load(spec, { ...settings, decoder: config.recognition.decoder });
    setups.push(await engineSetup(OURS, ours));
    if (!values['no-peers']) {
      if (ours.decoders.main === 'beam')
        setups.push(await engineSetup('ours, greedy', await OcrEngine.load(spec, { ...settings, decoder: 'greedy' })));
      if (spec.segmentation)
        setups.push(
          await engineSetup(
            'ours, detector lines',
            await OcrEngine.load({ ...spec, segmentation: null }, { ...settings, decoder: config.recognition.decoder }),
          ),
        );
      if (spec.directory !== null || spec.screening)
        setups.push(await engineSetup('PP-OCRv4 alone', await OcrEngine.load(builtinModelSpec(), { ...settings, decoder: 'greedy' })));
    }
    const tesseract = values['no-tesseract'] || values['no-peers'] ? null : await tesseractVersion();
    if (tesseract) {
      const pool = await runTesseractPool(pages);
      setups.push({
        label: 'tesseract',
        describe: `${tesseract}, ${pool.processes} processes at once, OMP_THREAD_LIMIT=1: ${pool.pagesPerSecond.toFixed(3)} pages/s`,
        async read(page) {
          const run = pool.runs[pages.indexOf(page)];
          if (!run) throw new Error(`tesseract: no run for ${page.name}`);
          return { lines: run.lines, ms: pool.wallMs / pages.length };
        },
        close: async () => undefined,
      });
    }
    console.log(`# recognition accuracy on ${pages.length} pages (${values.pages})`);
    for (const setup of setups) console.log(`- ${setup.label}: ${setup.describe}`);
    console.log('CER/WER after normalisation (bench/lib/text-metrics.ts), page text = lines in reading order');
    console.log(
      'GT found: ground-truth lines some recognised line overlaps; order: pairwise reading-order agreement with the ground truth (1 = same)',
    );
    console.log(
      "s/page: image decoding + layout + recognition, one page at a time (ours, models loaded before); tesseract: its pool's wall time / pages\n",
    );

    const rows: PageRow[] = [];
    for (const page of pages) {
      const scores = new Map<string, Scores>();
      let ourResult: PageResult | null = null;
      for (const setup of setups) {
        const read = await setup.read(page, rows.length + 1);
        scores.set(setup.label, { ...scorePage(read.lines, page.groundTruth), lines: read.lines.length, ms: read.ms });
        if (setup.label === OURS && read.result) ourResult = read.result;
      }
      const result = ourResult as PageResult;
      const truth = allLines(await pageResultFromGroundTruth({ imagePath: page.imagePath, xmlPath: page.xmlPath }));
      const matches = matchLines(result, truth);
      const layout = { found: new Set(matches.filter((index) => index >= 0)).size, order: readingOrderAgreement(matches) };
      rows.push({ page, layout, scores, result });
      if (values.save) {
        await mkdir(values.save, { recursive: true });
        await writeFile(path.join(values.save, `${page.name}.json`), JSON.stringify(result, null, 1));
      }
      process.stderr.write(
        `  ${page.name}: ${[...scores].map(([label, score]) => `${label} ${percent(errorRate(score.characters))}`).join(', ')}\n`,
      );
    }

    const labels = setups.map((setup) => setup.label);
    console.log(pageTable(rows, labels));
    console.log('');
    console.log(summaryTable(rows, labels));
    if (values.correction) await evaluateCorrectionHook(rows);
  } finally {
    await Promise.all(setups.map((setup) => setup.close()));
  }
  return 0;
}

function pageTable(rows: PageRow[], labels: string[]): string {
  const peers = labels.filter((label) => label === 'tesseract' || label === 'PP-OCRv4 alone');
  const short = (label: string): string => (label === 'tesseract' ? 'tess.' : label === 'PP-OCRv4 alone' ? 'PP' : label);
  return markdownTable(
    [
      'page',
      'kind',
      'lang',
      'GT lines',
      'our lines',
      'GT found',
      'order',
      'chars',
      ...[OURS, ...peers].map((label) => `CER ${short(label)}`),
      ...[OURS, ...peers].map((label) => `WER ${short(label)}`),
      `s ${OURS}`,
    ],
    rows.map(({ page, layout, scores }) => {
      const ours = scores.get(OURS) as Scores;
      return [
        page.name,
        page.kind,
        page.language,
        String(page.groundTruth.length),
        String(ours.lines),
        String(layout.found),
        layout.order.toFixed(3),
        String(ours.characters.length),
        ...[OURS, ...peers].map((label) => percent(errorRate((scores.get(label) as Scores).characters))),
        ...[OURS, ...peers].map((label) => percent(errorRate((scores.get(label) as Scores).words))),
        (ours.ms / 1000).toFixed(1),
      ];
    }),
  );
}

function summaryTable(rows: PageRow[], labels: string[]): string {
  const groups: [string, PageRow[]][] = [
    ...(['handwritten', 'printed'] as PageKind[]).map((kind): [string, PageRow[]] => [kind, rows.filter((row) => row.page.kind === kind)]),
    ['all pages', rows],
  ];
  const table: string[][] = [];
  for (const label of labels) {
    for (const [group, members] of groups) {
      if (members.length === 0) continue;
      const scores = members.map((row) => row.scores.get(label) as Scores);
      table.push([
        label,
        group,
        String(members.length),
        String(scores.reduce((sum, score) => sum + score.characters.length, 0)),
        percent(errorRate(...scores.map((score) => score.characters))),
        percent(errorRate(...scores.map((score) => score.words))),
        (scores.reduce((sum, score) => sum + score.ms, 0) / members.length / 1000).toFixed(2),
      ]);
    }
  }
  return markdownTable(['setup', 'pages', 'count', 'chars', 'CER', 'WER', 's/page'], table);
}

/** Hands the recognised pages to the correction evaluation (bench/eval-correction.ts) and prints its report. */
async function evaluateCorrectionHook(rows: PageRow[]): Promise<void> {
  const module = path.join(import.meta.dirname, 'eval-correction.ts');
  if (!existsSync(module)) {
    console.log('\ncorrection: bench/eval-correction.ts is not there');
    return;
  }
  const { evaluateCorrection, formatCorrectionReport } = await import(pathToFileURL(module).href);
  const result = await evaluateCorrection(
    rows.map((row) => ({ name: row.page.name, page: row.result, groundTruth: row.page.groundTruth, imagePath: row.page.imagePath })),
  );
  console.log(`\n${formatCorrectionReport(result)}`);
}

if (import.meta.main) process.exitCode = await main();
