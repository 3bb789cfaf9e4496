// `npm run bench:segmentation`: what the line segmenter costs. On the fixture pages
// (../shared/fixtures/pages, real scans of 2 to 15 megapixels) or --pages DIR, one process, models
// loaded before timing, one untimed warm-up page, then per page:
//   - the segmenter alone, split by stage: scaling the page and writing the input, the model run,
//     vectorising the maps (src/recognition/layout/line-segmenter.ts);
//   - the layout step of the default setup (segmenter, then reading order) against the layout of
//     the same setup without the segmenter (PP-OCRv4 detection, line grouping, reading order);
//   - the whole page (decode, layout, recognition) with and without the segmenter, and the ratio.
// Threads: ORT_THREADS (default: all cores), as the service.
//
//   node bench/segmentation.ts [--pages DIR] [--rounds N]
import os from 'node:os';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/platform/config.ts';
import { prepareImage } from '../src/recognition/image/prepare-image.ts';
import { segmentLines, type SegmentationTimings } from '../src/recognition/layout/line-segmenter.ts';
import { defaultModelSpec } from '../src/recognition/models/default-model.ts';
import { createSession } from '../src/recognition/models/onnx.ts';
import { OcrEngine } from '../src/recognition/engine/ocr-engine.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { markdownTable } from './lib/table.ts';

const { values } = parseArgs({ options: { pages: { type: 'string' }, rounds: { type: 'string', default: '2' } } });
const rounds = Number(values.rounds);
const config = loadConfig();
const settings = { threads: config.recognition.threads, concurrency: config.recognition.concurrency, decoder: config.recognition.decoder };
const spec = defaultModelSpec();
if (!spec.segmentation) throw new Error('the default setup has no line segmenter');
const segmentation = spec.segmentation;
const session = await createSession(segmentation.file, settings.threads);
const withSegmenter = await OcrEngine.load(spec, settings);
const detectorOnly = await OcrEngine.load({ ...spec, segmentation: null }, settings);
const pages = listFixturePages(values.pages ?? DEFAULT_PAGES_DIR);

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const result = await run();
  return [result, performance.now() - started];
};

interface Row {
  name: string;
  kind: string;
  megapixels: number;
  lines: number;
  stages: SegmentationTimings[];
  layoutSeg: number[];
  layoutDet: number[];
  pageSeg: number[];
  pageDet: number[];
}

const rows: Row[] = [];
let warm = false;
for (const page of pages) {
  const bytes = await readFile(page.imagePath);
  const prepared = await prepareImage(bytes, { name: page.name, maxPixels: config.limits.maxImagePixels });
  const image = prepared.raster;
  if (!warm) {
    await recognizePage(withSegmenter, bytes, { name: page.name, pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true });
    await recognizePage(detectorOnly, bytes, { name: page.name, pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true });
    warm = true;
  }
  const row: Row = {
    name: page.name,
    kind: page.kind,
    megapixels: (image.width * image.height) / 1e6,
    lines: 0,
    stages: [],
    layoutSeg: [],
    layoutDet: [],
    pageSeg: [],
    pageDet: [],
  };
  for (let round = 0; round < rounds; round += 1) {
    const stages: SegmentationTimings = { prepareMs: 0, modelMs: 0, vectoriseMs: 0 };
    const lines = await segmentLines(session, segmentation, image, stages);
    row.lines = lines.length;
    row.stages.push(stages);
    row.layoutSeg.push((await timed(() => withSegmenter.layout(image)))[1]);
    row.layoutDet.push((await timed(() => detectorOnly.layout(image)))[1]);
    const options = { name: page.name, pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true };
    row.pageSeg.push((await timed(() => recognizePage(withSegmenter, bytes, options)))[1]);
    row.pageDet.push((await timed(() => recognizePage(detectorOnly, bytes, options)))[1]);
  }
  rows.push(row);
  process.stderr.write(
    `${page.name}: ${row.lines} lines, segmenter ${mean(row.stages.map((s) => s.prepareMs + s.modelMs + s.vectoriseMs)).toFixed(0)} ms\n`,
  );
}

const fixed = (value: number): string => value.toFixed(0);
const table = markdownTable(
  [
    'page',
    'kind',
    'MP',
    'lines',
    'prepare ms',
    'model ms',
    'vectorise ms',
    'segmenter ms',
    'layout ms (segmenter)',
    'layout ms (detector)',
    'page ms (segmenter)',
    'page ms (detector)',
    'ratio',
  ],
  [
    ...rows.map((row) => [
      row.name,
      row.kind,
      row.megapixels.toFixed(1),
      String(row.lines),
      fixed(mean(row.stages.map((s) => s.prepareMs))),
      fixed(mean(row.stages.map((s) => s.modelMs))),
      fixed(mean(row.stages.map((s) => s.vectoriseMs))),
      fixed(mean(row.stages.map((s) => s.prepareMs + s.modelMs + s.vectoriseMs))),
      fixed(mean(row.layoutSeg)),
      fixed(mean(row.layoutDet)),
      fixed(mean(row.pageSeg)),
      fixed(mean(row.pageDet)),
      (mean(row.pageSeg) / mean(row.pageDet)).toFixed(2),
    ]),
    [
      '**mean**',
      '',
      mean(rows.map((row) => row.megapixels)).toFixed(1),
      fixed(mean(rows.map((row) => row.lines))),
      fixed(mean(rows.flatMap((row) => row.stages.map((s) => s.prepareMs)))),
      fixed(mean(rows.flatMap((row) => row.stages.map((s) => s.modelMs)))),
      fixed(mean(rows.flatMap((row) => row.stages.map((s) => s.vectoriseMs)))),
      fixed(mean(rows.flatMap((row) => row.stages.map((s) => s.prepareMs + s.modelMs + s.vectoriseMs)))),
      fixed(mean(rows.flatMap((row) => row.layoutSeg))),
      fixed(mean(rows.flatMap((row) => row.layoutDet))),
      fixed(mean(rows.flatMap((row) => row.pageSeg))),
      fixed(mean(rows.flatMap((row) => row.pageDet))),
      (mean(rows.flatMap((row) => row.pageSeg)) / mean(rows.flatMap((row) => row.pageDet))).toFixed(2),
    ],
  ],
);
console.log(
  [
    `# bench:segmentation on ${rows.length} pages, ${rounds} rounds each`,
    `- machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os.loadavg()[0].toFixed(1)}, ORT_THREADS=${settings.threads}; ${new Date().toISOString()}`,
    `- segmenter: ${segmentation.file} at ${segmentation.maxSideLength} px; detector: PP-OCRv4 via the same default setup without the segmenter`,
    '',
    table,
  ].join('\n'),
);
await session.release();
await withSegmenter.close();
await detectorOnly.close();
