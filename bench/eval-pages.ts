// `npm run eval:pages`: the whole page pipeline (image -> layout -> recognition) on whole
// pages with line-level ground truth, in one run for
//   - ours: the configured setup (MODEL_DIR, else models/default) and decoder;
//   - ours, detector lines: when ours has a line segmenter, the same recognizers on the lines of
//     the PP-OCRv4 detector and our line grouping (the layout before the segmenter);
//   - PP-OCRv4 alone (the built-in model, greedy), unless ours is it;
//   - tesseract (`tesseract` CLI, the page's language, TSV output for its line boxes; one
//     single-threaded process per core at once, as run at scale: s/page is that pool's wall / pages);
//   - with --gt-layout also ours and PP-OCRv4 alone reading the ground-truth lines (the
//     uploaded-layout path of the service: recognition alone, no detection).
// Per source and overall: page CER and WER at the `text_norm` level (bench/lib/text-metrics.ts),
// line recall and precision by pixels (bench/lib/line-coverage.ts; precision also without the
// wrong lines that lie outside every ground-truth region, where the ground truth did not transcribe), the share of ground-truth
// characters on missed lines, reading-order agreement, seconds per page; for the setups reading
// the ground-truth lines also each line's confidence against the share of its characters right.
//
//   node bench/eval-pages.ts [--dataset DIR] [--split val] [--dir DIR --lang eng] [--limit N] [--source S]
//                            [--gt-layout] [--no-tesseract] [--no-peers] [--out DIR]
//
// Default pages: the val split of ../shared/datasets/htr-pages (JSON ground truth in the tars).
// --dir DIR: image + PageXML/ALTO pairs with the same stem instead (`NAME.xml` or
// `NAME.alto.xml`); the source of a page is its name up to the first `_`.
// --limit N: the first N pages only (in dataset order, i.e. by source and document);
// --gt-only (with --gt-layout): only the ground-truth-line setups (recognition alone).
// --source a,b: only the pages of these sources (hooker, stanford, copiste, peraire, cremma19, poilus).
// Writes OUT/eval-pages.json (every page, every setup) and OUT/eval-pages.md (the tables).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { loadConfig } from '../src/platform/config.ts';
import { defaultModelSpec } from '../src/recognition/models/default-model.ts';
import { builtinModelSpec, loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import { OcrEngine } from '../src/recognition/engine/ocr-engine.ts';
import { allLines, type Point } from '../src/recognition/page/page-result.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { parseUploadedLayout } from '../src/recognition/layout/uploaded-layout.ts';
import { DEFAULT_HTR_PAGES, type EvalPage, pagesFromDataset } from './lib/htr-pages.ts';
import { lineCoverage } from './lib/line-coverage.ts';
import { markdownTable, percent } from './lib/table.ts';
import { boxOutlines, runTesseractPool, tesseractVersion } from './lib/tesseract.ts';
import { ConfidenceBins, errorRate, normaliseText, rightCharacters, scorePage, type ErrorCount } from './lib/text-metrics.ts';

interface PageScore {
  characters: ErrorCount;
  words: ErrorCount;
  /**
   * The same with the read lines put in the ground truth's order (each where the ground-truth
   * line it shares most pixels with stands; lines on no ground-truth line last): what is left
   * when the reading order agrees, so the gap to `characters` is the order's share.
   */
  charactersInTruthOrder: ErrorCount;
  /** Ground-truth lines found / detected lines right / their counts. */
  gtLines: number;
  found: number;
  detected: number;
  right: number;
  /** Detected lines not right and mostly outside every ground-truth region. */
  outside: number;
  /** Normalised ground-truth characters on lines not found, and on all lines. */
  missedChars: number;
  gtChars: number;
  order: number | null;
  ms: number;
  /** Setups reading the ground-truth lines: each transcribed line's confidence against its share of characters right. */
  confidence?: ConfidenceBins;
}

interface Setup {
  label: string;
  describe: string;
  /** Reads the ground-truth lines, so that its lines are the ground truth's, one for one. */
  groundTruthLines?: boolean;
  read(
    page: EvalPage,
    pageNumber: number,
  ): Promise<{ lines: string[]; polygons: Point[][]; ms: number; layoutBy?: string; confidences?: number[] }>;
  close(): Promise<void>;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      dataset: { type: 'string', default: DEFAULT_HTR_PAGES },
      split: { type: 'string', default: 'val' },
      dir: { type: 'string' },
      lang: { type: 'string', default: 'eng' },
      limit: { type: 'string' },
      source: { type: 'string' },
      'gt-layout': { type: 'boolean', default: false },
      'gt-only': { type: 'boolean', default: false },
      'no-tesseract': { type: 'boolean', default: false },
      'no-peers': { type: 'boolean', default: false },
      out: { type: 'string', default: path.join(os.tmpdir(), 'hwr-eval-pages') },
    },
  });
  mkdirSync(values.out, { recursive: true });
  let pages = values.dir
    ? await pagesFromDirectory(values.dir, values.lang)
    : pagesFromDataset(values.dataset, values.split, path.join(values.out, 'images'));
  if (values.source) pages = pages.filter((page) => values.source!.split(',').includes(page.source));
  if (values.limit) pages = pages.slice(0, Number(values.limit));

  const config = loadConfig();
  const settings = { threads: config.recognition.threads, concurrency: config.recognition.concurrency };
  const spec = config.recognition.modelDir ? loadModelSpec(config.recognition.modelDir) : defaultModelSpec();
  const engineSetup = (label: string, engine: OcrEngine, groundTruthLines: boolean): Setup => ({
    label,
    describe: `${engine.spec.name} ${engine.spec.version}: ${engine.models
      .filter((model) => model.role === 'recognition')
      .map((model) => `${model.name} ${model.version}`)
      .join(' + ')}; decoding ${engine.decoders.main}${groundTruthLines ? '; ground-truth lines (no detection)' : ''}`,
    async read(page, pageNumber) {
      const started = performance.now();
      const { page: result, layoutBy } = await recognizePage(engine, readFileSync(page.imagePath), {
        name: path.basename(page.imagePath),
        pageNumber,
        maxPixels: config.limits.maxImagePixels,
        recognize: true,
        ...(groundTruthLines ? { layout: page.truth } : {}),
      });
      const ms = performance.now() - started;
      const lines = allLines(result);
      return {
        lines: lines.map((line) => line.text),
        polygons: lines.map((line) => line.polygon),
        confidences: lines.map((line) => line.confidence),
        ms,
        layoutBy,
      };
    },
    groundTruthLines,
    close: async () => undefined,
  });

  const setups: Setup[] = [];
  const engines: OcrEngine[] = [];
  try {
    const ours = await OcrEngine.load(spec, { ...settings, decoder: config.recognition.decoder });
    engines.push(ours);
    setups.push(engineSetup('ours', ours, false));
    if (spec.segmentation && !values['no-peers']) {
      // The same recognizers on the PP-OCRv4 detector's lines (the layout before the line segmenter).
      const detectorLines = await OcrEngine.load({ ...spec, segmentation: null }, { ...settings, decoder: config.recognition.decoder });
      engines.push(detectorLines);
      setups.push(engineSetup('ours, detector lines', detectorLines, false));
    }
    const peers = !values['no-peers'];
    const ppAlone =
      peers && (spec.directory !== null || spec.screening)
        ? await OcrEngine.load(builtinModelSpec(), { ...settings, decoder: 'greedy' })
        : null;
    if (ppAlone) engines.push(ppAlone);
    if (ppAlone) setups.push(engineSetup('PP-OCRv4 alone', ppAlone, false));
    // Models load lazily, at a page's first use of each: load them now, so that no page's time includes it.
    await Promise.all(engines.map((engine) => engine.loadAll()));
    const tesseract = values['no-tesseract'] || !peers ? null : await tesseractVersion();
    if (tesseract) {
      // As run at scale: one single-threaded process per page, as many at once as cores; its s/page is the pool's wall / pages.
      const pool = await runTesseractPool(pages, { boxes: true });
      setups.push({
        label: 'tesseract',
        describe: `${tesseract}, ${pool.processes} processes at once, OMP_THREAD_LIMIT=1: ${pool.pagesPerSecond.toFixed(3)} pages/s (s/page: its wall time / pages)`,
        async read(page) {
          const run = pool.runs[pages.indexOf(page)];
          if (!run) throw new Error(`tesseract: no run for ${page.name}`);
          return { lines: run.lines, polygons: boxOutlines(run), ms: pool.wallMs / pages.length };
        },
        close: async () => undefined,
      });
    }
    if (values['gt-layout']) {
      // The same engines read the ground-truth lines (a second label, same models).
      setups.push(engineSetup('ours, GT lines', ours, true));
      if (ppAlone) setups.push(engineSetup('PP-OCRv4 alone, GT lines', ppAlone, true));
    }

    if (values['gt-only']) setups.splice(0, setups.length, ...setups.filter((setup) => setup.label.endsWith('GT lines')));
    if (setups.length === 0) throw new Error('--gt-only needs --gt-layout');
    const header = [
      `# eval:pages on ${pages.length} pages (${values.dir ?? `${values.dataset} ${values.split}`})`,
      ...setups.map((setup) => `- ${setup.label}: ${setup.describe}`),
      `- machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ORT_THREADS=${settings.threads}; ${new Date().toISOString()}`,
    ];
    console.log(header.join('\n'));
    const scores = new Map<string, Map<string, PageScore>>(setups.map((setup) => [setup.label, new Map()]));
    const started = performance.now();
    for (const [index, page] of pages.entries()) {
      const truthLines = page.truth.regions.flatMap((region) => region.lines);
      const reference = truthLines.map((line) => line.text);
      const parts: string[] = [];
      for (const setup of setups) {
        const read = await setup.read(page, index + 1);
        const coverage = lineCoverage(
          page.width,
          page.height,
          truthLines.map((line) => line.polygon),
          read.polygons,
          page.truth.regions.map((region) => region.polygon),
        );
        const lineChars = truthLines.map((line) => [...normaliseText(line.text)].length);
        const inTruthOrder = read.lines
          .map((text, index) => {
            const match = coverage.matches[index] ?? -1;
            return { text, index, at: match < 0 ? truthLines.length : match };
          })
          .sort((a, b) => a.at - b.at || a.index - b.index)
          .map((line) => line.text);
        const score: PageScore = {
          ...scorePage(read.lines, reference),
          charactersInTruthOrder: scorePage(inTruthOrder, reference).characters,
          gtLines: truthLines.length,
          found: coverage.found.filter(Boolean).length,
          detected: read.polygons.length,
          right: coverage.right.filter(Boolean).length,
          outside: coverage.outside.filter(Boolean).length,
          missedChars: lineChars.reduce((sum, chars, line) => sum + (coverage.found[line] ? 0 : chars), 0),
          gtChars: lineChars.reduce((sum, chars) => sum + chars, 0),
          order: coverage.order,
          ms: read.ms,
          ...(setup.groundTruthLines && read.confidences ? { confidence: lineConfidences(read.lines, read.confidences, reference) } : {}),
        };
        scores.get(setup.label)!.set(page.name, score);
        const by = read.layoutBy && read.layoutBy !== 'uploaded' ? `, ${read.layoutBy}` : '';
        parts.push(`${setup.label} ${percent(errorRate(score.characters))} (${score.found}/${score.gtLines}${by})`);
      }
      process.stderr.write(
        `[${index + 1}/${pages.length} ${((performance.now() - started) / 1000).toFixed(0)} s] ${page.name}: ${parts.join(', ')}\n`,
      );
    }

    const labels = setups.map((setup) => setup.label);
    const sources = [...new Set(pages.map((page) => page.source))];
    const groups: [string, EvalPage[]][] = [
      ...sources.map((source): [string, EvalPage[]] => [source, pages.filter((page) => page.source === source)]),
      ['all', pages],
    ];
    const rows: string[][] = [];
    const summary: Record<string, Record<string, ReturnType<typeof summarise>>> = {};
    for (const label of labels) {
      summary[label] = {};
      for (const [group, members] of groups) {
        const s = summarise(members.map((page) => scores.get(label)!.get(page.name)!));
        summary[label][group] = s;
        rows.push([
          label,
          group,
          String(members.length),
          String(s.gtLines),
          String(s.gtChars),
          percent(s.cer),
          percent(s.cerInTruthOrder),
          percent(s.wer),
          s.recall.toFixed(3),
          s.precision.toFixed(3),
          s.precisionAnnotated.toFixed(3),
          percent(s.missedShare),
          s.order === null ? 'n/a' : s.order.toFixed(3),
          s.secondsPerPage.toFixed(2),
        ]);
      }
    }
    const table = markdownTable(
      [
        'setup',
        'source',
        'pages',
        'GT lines',
        'GT chars',
        'CER',
        'CER in GT order',
        'WER',
        'line recall',
        'line precision',
        'precision in GT regions',
        'chars on missed lines',
        'order',
        's/page',
      ],
      rows,
    );
    const wide = wideTables(labels, groups, summary);
    const confidenceRows = labels.flatMap((label) =>
      groups.flatMap(([group]) => {
        const c = summary[label][group].confidence;
        return c ? [[label, group, String(c.characters), c.meanConfidence.toFixed(3), c.shareRight.toFixed(3), c.ece.toFixed(3)]] : [];
      }),
    );
    const confidenceTable =
      confidenceRows.length === 0
        ? ''
        : `Line confidence on the ground-truth lines (character-weighted; lines the ground truth left empty left out):\n\n${markdownTable(
            ['setup', 'source', 'characters read', 'mean confidence', 'share right', 'ECE (10 bins)'],
            confidenceRows,
          )}`;
    if (confidenceTable) console.log(`\n${confidenceTable}`);
    const markdown = [
      ...header,
      '',
      wide,
      '',
      ...(confidenceTable ? [confidenceTable, ''] : []),
      '<details><summary>every setup, every measure</summary>',
      '',
      table,
      '',
      '</details>',
      '',
    ].join('\n');
    console.log(`\n${wide}`);
    console.log(`\n${table}`);
    writeFileSync(path.join(values.out, 'eval-pages.md'), markdown);
    writeFileSync(
      path.join(values.out, 'eval-pages.json'),
      JSON.stringify(
        {
          pages: pages.length,
          input: values.dir ?? `${values.dataset} (${values.split})`,
          setups: setups.map((setup) => ({ label: setup.label, describe: setup.describe })),
          seconds: (performance.now() - started) / 1000,
          summary,
          perPage: Object.fromEntries(labels.map((label) => [label, Object.fromEntries(scores.get(label)!)])),
        },
        null,
        1,
      ),
    );
    console.error(`report: ${path.join(values.out, 'eval-pages.json')}, ${path.join(values.out, 'eval-pages.md')}`);
  } finally {
    await Promise.all([...setups.map((setup) => setup.close()), ...engines.map((engine) => engine.close())]);
  }
  return 0;
}

/**
 * The report's two compact tables, one row per source and `all`: text (CER and WER of every
 * setup) and layout (line recall, precision, characters on missed lines, order and s/page of
 * every setup that detects lines itself).
 */
export function wideTables(
  labels: string[],
  groups: [string, EvalPage[]][],
  summary: Record<string, Record<string, ReturnType<typeof summarise>>>,
): string {
  const short = (label: string): string =>
    label.replace('PP-OCRv4 alone', 'PP').replace('tesseract', 'tess.').replace(', GT lines', ' (GT lines)');
  const first = summary[labels[0]];
  const lead = (group: string, members: EvalPage[]): string[] => [
    group === 'all' ? '**all**' : group,
    String(members.length),
    String(first[group].gtLines),
    String(first[group].gtChars),
  ];
  const text = markdownTable(
    [
      'source',
      'pages',
      'GT lines',
      'GT chars',
      ...labels.map((label) => `CER ${short(label)}`),
      ...labels.map((label) => `WER ${short(label)}`),
    ],
    groups.map(([group, members]) => [
      ...lead(group, members),
      ...labels.map((label) => percent(summary[label][group].cer)),
      ...labels.map((label) => percent(summary[label][group].wer)),
    ]),
  );
  const detecting = labels.filter((label) => !label.endsWith('GT lines') && label !== 'PP-OCRv4 alone');
  const layout = markdownTable(
    [
      'source',
      'pages',
      'GT lines',
      ...detecting.flatMap((label) => [
        `recall ${short(label)}`,
        `precision ${short(label)}`,
        `prec. in GT regions ${short(label)}`,
        `chars missed ${short(label)}`,
        `order ${short(label)}`,
      ]),
      ...labels.map((label) => `s/page ${short(label)}`),
    ],
    groups.map(([group, members]) => [
      group === 'all' ? '**all**' : group,
      String(members.length),
      String(first[group].gtLines),
      ...detecting.flatMap((label) => {
        const s = summary[label][group];
        return [
          s.recall.toFixed(3),
          s.precision.toFixed(3),
          s.precisionAnnotated.toFixed(3),
          percent(s.missedShare),
          s.order === null ? 'n/a' : s.order.toFixed(3),
        ];
      }),
      ...labels.map((label) => summary[label][group].secondsPerPage.toFixed(2)),
    ]),
  );
  return `${text}\n\n${layout}`;
}

/** Character-weighted rates; line counts summed; order averaged over pages that have one; seconds per page. */
function summarise(scores: PageScore[]) {
  const sum = (pick: (score: PageScore) => number): number => scores.reduce((total, score) => total + pick(score), 0);
  const orders = scores.map((score) => score.order).filter((order): order is number => order !== null);
  return {
    cer: errorRate(...scores.map((score) => score.characters)),
    cerInTruthOrder: errorRate(...scores.map((score) => score.charactersInTruthOrder)),
    wer: errorRate(...scores.map((score) => score.words)),
    gtLines: sum((score) => score.gtLines),
    gtChars: sum((score) => score.gtChars),
    recall:
      sum((score) => score.found) /
      Math.max(
        1,
        sum((score) => score.gtLines),
      ),
    precision:
      sum((score) => score.right) /
      Math.max(
        1,
        sum((score) => score.detected),
      ),
    /** Precision without the wrong lines outside every ground-truth region (writing the ground truth did not transcribe). */
    precisionAnnotated:
      sum((score) => score.right) /
      Math.max(
        1,
        sum((score) => score.detected - score.outside),
      ),
    missedShare:
      sum((score) => score.missedChars) /
      Math.max(
        1,
        sum((score) => score.gtChars),
      ),
    order: orders.length === 0 ? null : orders.reduce((a, b) => a + b, 0) / orders.length,
    secondsPerPage: sum((score) => score.ms) / Math.max(1, scores.length) / 1000,
    confidence: confidenceSummary(scores),
  };
}

/**
 * Each line's stated confidence (the mean of its characters') against the share of its characters
 * that are right, weighted by its characters (spaces left out on both sides); lines the ground
 * truth did not transcribe are left out (nothing there can be right).
 */
function lineConfidences(lines: readonly string[], confidences: readonly number[], reference: readonly string[]): ConfidenceBins {
  if (lines.length !== reference.length) throw new Error(`${lines.length} lines read for ${reference.length} ground-truth lines`);
  const bins = new ConfidenceBins();
  lines.forEach((text, index) => {
    const truth = normaliseText(reference[index]);
    const characters = [...text];
    const read = characters.filter((character) => character !== ' ').length;
    if (truth === '' || read === 0) return;
    const right = rightCharacters([...truth], characters).filter((ok, k) => ok && characters[k] !== ' ').length;
    bins.add(confidences[index], right, read);
  });
  return bins;
}

function confidenceSummary(scores: PageScore[]): { characters: number; meanConfidence: number; shareRight: number; ece: number } | null {
  const measured = scores.filter((score) => score.confidence);
  if (measured.length === 0) return null;
  const bins = new ConfidenceBins();
  for (const score of measured) bins.merge(score.confidence!);
  return { characters: bins.weight, meanConfidence: bins.meanConfidence, shareRight: bins.shareRight, ece: bins.ece };
}

/** Image + PageXML/ALTO pairs with the same stem. */
async function pagesFromDirectory(directory: string, language: string): Promise<EvalPage[]> {
  const files = readdirSync(directory).sort();
  const pages: EvalPage[] = [];
  for (const file of files) {
    if (!/\.(jpe?g|png|tiff?|webp)$/i.test(file)) continue;
    const stem = file.replace(/\.[^.]+$/, '');
    const xml = files.find((candidate) => candidate === `${stem}.xml`) ?? files.find((candidate) => candidate === `${stem}.alto.xml`);
    if (!xml) continue;
    const imagePath = path.join(directory, file);
    const size = await imageSize(imagePath);
    pages.push({
      name: stem,
      source: stem.split('_')[0],
      language,
      imagePath,
      ...size,
      truth: parseUploadedLayout(readFileSync(path.join(directory, xml)), size),
    });
  }
  if (pages.length === 0) throw new Error(`no image + PageXML/ALTO pairs in ${directory}`);
  return pages;
}

async function imageSize(file: string): Promise<{ width: number; height: number }> {
  const metadata = await sharp(file).metadata();
  const swap = (metadata.orientation ?? 1) >= 5;
  return { width: swap ? metadata.height : metadata.width, height: swap ? metadata.width : metadata.height };
}

if (import.meta.main) process.exitCode = await main();
