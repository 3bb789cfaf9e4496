// `npm run bench:upside-down`: pages scanned upside down (recognition/page-turn.ts). Every fixture
// page (../shared/fixtures/pages) and htr-pages val page is read as it lies and turned by 180°
// (losslessly, PNG) with the configured setup; per source: page CER both ways, how many pages the
// service turned, and what the check costs an upright page (its share of the page's time).
//
//   node bench/upside-down.ts [--limit N]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { loadConfig } from '../src/config.ts';
import { prepareImage } from '../src/pipeline/image/prepare-image.ts';
import { allLines } from '../src/pipeline/page-result.ts';
import { recognizePage } from '../src/pipeline/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset } from './lib/htr-pages.ts';
import { markdownTable, percent } from './lib/table.ts';
import { type ErrorCount, errorRate, scorePage } from './lib/text-metrics.ts';

const { values } = parseArgs({ options: { limit: { type: 'string' } } });
const config = loadConfig();
const engine = await sharedEngine(config.recognition);
const pages = [
  ...listFixturePages(DEFAULT_PAGES_DIR).map((page) => ({
    name: page.name,
    source: 'fixtures',
    imagePath: page.imagePath,
    truth: page.groundTruth,
  })),
  ...pagesFromDataset(DEFAULT_HTR_PAGES, 'val', '/tmp/hwr-bench-upside-down').map((page) => ({
    name: page.name,
    source: `val ${page.source}`,
    imagePath: page.imagePath,
    truth: page.truth.regions.flatMap((region) => region.lines.map((line) => line.text)),
  })),
].slice(0, values.limit ? Number(values.limit) : undefined);

interface SourceTotals {
  pages: number;
  upright: ErrorCount[];
  turned: ErrorCount[];
  uprightTurned: number;
  turnedTurned: number;
  checkMs: number;
  pageMs: number;
}
const totals = new Map<string, SourceTotals>();
const read = (bytes: Buffer, name: string) =>
  recognizePage(engine, bytes, { name, pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true });

for (const page of pages) {
  const bytes = await readFile(page.imagePath);
  const turnedBytes = await sharp(bytes).rotate(180).png().toBuffer();
  let start = performance.now();
  const upright = await read(bytes, page.name);
  const pageMs = performance.now() - start;
  const turned = await read(turnedBytes, page.name);
  // the check alone, as the page pipeline makes it on the upright page's layout
  const raster = (await prepareImage(bytes, { name: page.name, maxPixels: config.limits.maxImagePixels })).raster;
  const layout = await engine.layout(raster);
  start = performance.now();
  await engine.isUpsideDown(raster, layout);
  const checkMs = performance.now() - start;

  for (const key of [page.source, 'all']) {
    const t = totals.get(key) ?? { pages: 0, upright: [], turned: [], uprightTurned: 0, turnedTurned: 0, checkMs: 0, pageMs: 0 };
    t.pages += 1;
    t.upright.push(
      scorePage(
        allLines(upright.page).map((line) => line.text),
        page.truth,
      ).characters,
    );
    t.turned.push(
      scorePage(
        allLines(turned.page).map((line) => line.text),
        page.truth,
      ).characters,
    );
    if (upright.page.orientation === 180) t.uprightTurned += 1;
    if (turned.page.orientation === 180) t.turnedTurned += 1;
    t.checkMs += checkMs;
    t.pageMs += pageMs;
    totals.set(key, t);
  }
  process.stderr.write('.');
}
process.stderr.write('\n');
await closeSharedEngines();

console.log(`# Pages upside down (${pages.length} pages, each also turned by 180°; ${engine.spec.name} ${engine.spec.version})\n`);
console.log(
  markdownTable(
    ['source', 'pages', 'CER upright', 'CER turned', 'upright pages turned', 'turned pages turned', 'check ms/page', 'share of page time'],
    [...totals]
      .sort(([a], [b]) => Number(a === 'all') - Number(b === 'all'))
      .map(([source, t]) => [
        source,
        String(t.pages),
        percent(errorRate(...t.upright)),
        percent(errorRate(...t.turned)),
        String(t.uprightTurned),
        String(t.turnedTurned),
        (t.checkMs / t.pages).toFixed(0),
        percent(t.checkMs / t.pageMs),
      ]),
  ),
);
