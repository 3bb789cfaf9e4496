// `npm run bench:capture`: the whole page pipeline on pages captured other than as clean scans
// (bench/lib/capture-conditions.ts: resolution, tilt, hard compression, bitonal TIFF, a dark
// scanner bed, a phone photo), each against the same page as stored. The pages are the htr-pages
// val split (../shared/datasets/htr-pages; none of them tuned the conditions' handling). Per
// condition: page CER and WER at the `text_norm` level, line recall and precision by pixels (the
// ground-truth outlines carried into the captured image), seconds per page; with --tesseract the
// same for Tesseract on the same images (one single-threaded process per core at once, s/page its
// pool's wall / images), as the peer whose losses ours are compared with; with
// --gt-lines also ours reading the ground-truth lines carried into the image (the uploaded-layout
// path: recognition alone), which tells the recognizer's share of a loss from the layout's.
//
//   node bench/capture-conditions.ts [--limit N] [--source a,b] [--conditions "bitonal,JPEG 15"] [--gt-lines] [--tesseract] [--out DIR]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/platform/config.ts';
import type { UploadedLayout } from '../src/recognition/layout/uploaded-layout.ts';
import { allLines, type Point } from '../src/recognition/page/page-result.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { CAPTURE_CONDITIONS } from './lib/capture-conditions.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset } from './lib/htr-pages.ts';
import { lineCoverage } from './lib/line-coverage.ts';
import { markdownTable, percent } from './lib/table.ts';
import { boxOutlines, runTesseractPool, tesseractVersion } from './lib/tesseract.ts';
import { type ErrorCount, errorRate, scorePage } from './lib/text-metrics.ts';

const { values } = parseArgs({
  options: {
    limit: { type: 'string' },
    source: { type: 'string' },
    conditions: { type: 'string' },
    'gt-lines': { type: 'boolean', default: false },
    tesseract: { type: 'boolean', default: false },
    out: { type: 'string', default: path.join(os.tmpdir(), 'hwr-bench-capture') },
  },
});
mkdirSync(values.out, { recursive: true });
let pages = pagesFromDataset(DEFAULT_HTR_PAGES, 'val', path.join(values.out, 'images'));
if (values.source) pages = pages.filter((page) => values.source!.split(',').includes(page.source));
if (values.limit) pages = pages.slice(0, Number(values.limit));
const wanted = values.conditions?.split(',').map((name) => name.trim());
const unknown = wanted?.filter((name) => !CAPTURE_CONDITIONS.some((condition) => condition.name === name)) ?? [];
if (unknown.length > 0)
  throw new Error(`unknown conditions ${unknown.join(', ')}; known: ${CAPTURE_CONDITIONS.map((c) => c.name).join(', ')}`);
const conditions = CAPTURE_CONDITIONS.filter((condition) => !wanted || wanted.includes(condition.name) || condition.name === 'as stored');

const config = loadConfig();
const engine = await sharedEngine(config.recognition);
const tesseract = values.tesseract ? await tesseractVersion() : null;
if (values.tesseract && !tesseract) throw new Error('--tesseract: no tesseract on PATH');

interface Score {
  characters: ErrorCount;
  words: ErrorCount;
  gtLines: number;
  found: number;
  detected: number;
  right: number;
  ms: number;
}
type Reader = 'ours' | 'ours, GT lines' | 'tesseract';
const scores = new Map<string, Score[]>(); // `${reader}\t${condition}\t${source}`
const add = (reader: Reader, condition: string, source: string, score: Score) => {
  for (const key of [`${reader}\t${condition}\t${source}`, `${reader}\t${condition}\tall`])
    scores.set(key, [...(scores.get(key) ?? []), score]);
};

const started = performance.now();
for (const [index, page] of pages.entries()) {
  const original = readFileSync(page.imagePath);
  const truthLines = page.truth.regions.flatMap((region) => region.lines);
  const reference = truthLines.map((line) => line.text);
  const parts: string[] = [];
  // Tesseract reads each page's captured images after its conditions, as run at scale: one
  // single-threaded process per image, as many at once as cores; s/page is that pool's wall / images.
  const forTesseract: {
    imagePath: string;
    language: string;
    condition: string;
    score: (lines: string[], polygons: Point[][], ms: number) => Score;
  }[] = [];
  for (const condition of conditions) {
    const captured = await condition.capture(original);
    const truthOutlines = truthLines.map((line) => line.polygon.map(captured.map));
    const score = (lines: string[], polygons: Point[][], ms: number): Score => {
      const coverage = lineCoverage(captured.width, captured.height, truthOutlines, polygons);
      return {
        ...scorePage(lines, reference),
        gtLines: truthLines.length,
        found: coverage.found.filter(Boolean).length,
        detected: polygons.length,
        right: coverage.right.filter(Boolean).length,
        ms,
      };
    };
    const read = async (layout?: UploadedLayout): Promise<Score> => {
      const start = performance.now();
      const { page: result } = await recognizePage(engine, captured.bytes, {
        name: page.name,
        pageNumber: index + 1,
        maxPixels: config.limits.maxImagePixels,
        recognize: true,
        ...(layout ? { layout } : {}),
      });
      const ms = performance.now() - start;
      const lines = allLines(result);
      return score(
        lines.map((line) => line.text),
        lines.map((line) => line.polygon),
        ms,
      );
    };
    const ours = await read();
    add('ours', condition.name, page.source, ours);
    parts.push(`${condition.name} ${percent(errorRate(ours.characters))}`);
    if (values['gt-lines']) {
      const truth = carried(page.truth, captured.map);
      const onTruth = await read(truth);
      add('ours, GT lines', condition.name, page.source, onTruth);
      parts.push(`(GT lines ${percent(errorRate(onTruth.characters))})`);
    }
    if (tesseract) {
      const imagePath = path.join(values.out, `captured-page-${forTesseract.length}`); // Leptonica tells the format by its bytes
      writeFileSync(imagePath, captured.bytes);
      forTesseract.push({ imagePath, language: page.language, condition: condition.name, score });
    }
  }
  if (forTesseract.length > 0) {
    const pool = await runTesseractPool(forTesseract, { boxes: true });
    for (const [at, item] of forTesseract.entries()) {
      const run = pool.runs[at]!;
      add('tesseract', item.condition, page.source, item.score(run.lines, boxOutlines(run), pool.wallMs / forTesseract.length));
    }
  }
  process.stderr.write(
    `[${index + 1}/${pages.length} ${((performance.now() - started) / 1000).toFixed(0)} s] ${page.name}: ${parts.join(', ')}\n`,
  );
}
await closeSharedEngines();

const sum = (list: Score[], pick: (score: Score) => number) => list.reduce((total, score) => total + pick(score), 0);
const cer = (list: Score[]) => errorRate(...list.map((score) => score.characters));
const readers: Reader[] = [
  'ours',
  ...(values['gt-lines'] ? (['ours, GT lines'] as const) : []),
  ...(tesseract ? (['tesseract'] as const) : []),
];
const sources = [...new Set(pages.map((page) => page.source)), 'all'];
const baseline = (reader: Reader, source: string) => cer(scores.get(`${reader}\tas stored\t${source}`) ?? []);

const header = [
  `# Capture conditions: ${pages.length} htr-pages val pages, each read as stored and as captured otherwise`,
  `- ours: ${engine.spec.name} ${engine.spec.version}, decoding ${engine.decoders.main}${tesseract ? `; peer: ${tesseract}` : ''}`,
  `- machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ORT_THREADS=${config.recognition.threads}; ${new Date().toISOString()}`,
  '',
  ...conditions.map((condition) => `- **${condition.name}**: ${condition.describe}`),
];
const overall = markdownTable(
  [
    'condition',
    ...readers.flatMap((reader) => [
      `${reader} CER`,
      `${reader} WER`,
      `${reader} CER ÷ as stored`,
      `${reader} line recall`,
      `${reader} line precision`,
      `${reader} s/page`,
    ]),
  ],
  conditions.map((condition) => [
    condition.name,
    ...readers.flatMap((reader) => {
      const list = scores.get(`${reader}\t${condition.name}\tall`) ?? [];
      return [
        percent(cer(list)),
        percent(errorRate(...list.map((score) => score.words))),
        (cer(list) / baseline(reader, 'all')).toFixed(2),
        (sum(list, (s) => s.found) / sum(list, (s) => s.gtLines)).toFixed(3),
        (
          sum(list, (s) => s.right) /
          Math.max(
            1,
            sum(list, (s) => s.detected),
          )
        ).toFixed(3),
        (sum(list, (s) => s.ms) / 1000 / Math.max(1, list.length)).toFixed(2),
      ];
    }),
  ]),
);
const bySource = markdownTable(
  [
    'condition',
    ...sources.map((source) => `${source} (${source === 'all' ? pages.length : pages.filter((p) => p.source === source).length})`),
  ],
  conditions.map((condition) => [
    condition.name,
    ...sources.map((source) => percent(cer(scores.get(`ours\t${condition.name}\t${source}`) ?? []))),
  ]),
);
/** The ground-truth layout with every outline and baseline carried into the captured image. */
function carried(truth: UploadedLayout, map: (point: Point) => Point): UploadedLayout {
  return {
    ...truth,
    regions: truth.regions.map((region) => ({
      ...region,
      polygon: region.polygon.map(map),
      lines: region.lines.map((line) => ({ ...line, polygon: line.polygon.map(map), baseline: line.baseline.map(map) })),
    })),
  };
}

const report = [...header, '', overall, '', 'Ours, page CER by source:', '', bySource, ''].join('\n');
console.log(`\n${report}`);
writeFileSync(path.join(values.out, 'capture-conditions.md'), report);
console.error(`report: ${path.join(values.out, 'capture-conditions.md')} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
