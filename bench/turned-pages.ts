// `npm run bench:turned-pages`: pages scanned sideways or upside down (recognition/page-turn.ts).
// Every fixture page (../shared/fixtures/pages) and htr-pages val page is read as it lies and
// turned by 90°, 180° and 270° clockwise (losslessly, PNG) with the configured setup; per source and
// turn: page CER, how many pages the service turned back right, and how many upright pages it
// turned; and what the check costs an upright page (its share of the page's time).
//
//   node bench/turned-pages.ts [--limit N]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { loadConfig } from '../src/platform/config.ts';
import { prepareImage } from '../src/recognition/image/prepare-image.ts';
import { allLines } from '../src/recognition/page/page-result.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
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
  ...pagesFromDataset(DEFAULT_HTR_PAGES, 'val', '/tmp/hwr-bench-turned-pages').map((page) => ({
    name: page.name,
    source: `val ${page.source}`,
    imagePath: page.imagePath,
    truth: page.truth.regions.flatMap((region) => region.lines.map((line) => line.text)),
  })),
].slice(0, values.limit ? Number(values.limit) : undefined);

const TURNS = [0, 90, 180, 270] as const;
interface SourceTotals {
  pages: number;
  /** Character errors per turn of the image. */
  errors: Map<number, ErrorCount[]>;
  /** Pages turned back upright (the service's turn undoes the image's), per turn of the image. */
  righted: Map<number, number>;
  checkMs: number;
  pageMs: number;
}
const totals = new Map<string, SourceTotals>();
const missed: string[] = [];
const read = (bytes: Buffer, name: string) =>
  recognizePage(engine, bytes, { name, pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true });

for (const page of pages) {
  const bytes = await readFile(page.imagePath);
  const row = new Map<number, { errors: ErrorCount; righted: boolean }>();
  let pageMs = 0;
  for (const turn of TURNS) {
    const start = performance.now();
    const result = await read(turn === 0 ? bytes : await sharp(bytes).rotate(turn).png().toBuffer(), page.name);
    if (turn === 0) pageMs = performance.now() - start;
    row.set(turn, {
      errors: scorePage(
        allLines(result.page).map((line) => line.text),
        page.truth,
      ).characters,
      // the image turned clockwise by `turn` needs (360 - turn) to be upright again
      righted: (result.page.orientation ?? 0) === (360 - turn) % 360,
    });
  }
  for (const [turn, { righted }] of row) if (!righted) missed.push(`${page.name} turned by ${turn}°`);
  // the check alone, as the page pipeline makes it on the upright page's layout
  const raster = (await prepareImage(bytes, { name: page.name, maxPixels: config.limits.maxImagePixels })).raster;
  const layout = await engine.layout(raster);
  const start = performance.now();
  await engine.upright(raster, layout);
  const checkMs = performance.now() - start;

  for (const key of [page.source, 'all']) {
    const t = totals.get(key) ?? { pages: 0, errors: new Map(), righted: new Map(), checkMs: 0, pageMs: 0 };
    t.pages += 1;
    for (const turn of TURNS) {
      const { errors, righted } = row.get(turn)!;
      t.errors.set(turn, [...(t.errors.get(turn) ?? []), errors]);
      t.righted.set(turn, (t.righted.get(turn) ?? 0) + Number(righted));
    }
    t.checkMs += checkMs;
    t.pageMs += pageMs;
    totals.set(key, t);
  }
  process.stderr.write('.');
}
process.stderr.write('\n');
await closeSharedEngines();

console.log(
  `# Pages turned (${pages.length} pages, each read as it lies and turned by 90, 180 and 270° clockwise; ${engine.spec.name} ${engine.spec.version})\n`,
);
console.log(
  'CER of the pages turned by each angle, and in brackets how many the service turned back upright (for 0°: left as they lie).\n',
);
console.log(
  markdownTable(
    ['source', 'pages', ...TURNS.map((turn) => `${turn}°`), 'check ms/page', 'share of page time'],
    [...totals]
      .sort(([a], [b]) => Number(a === 'all') - Number(b === 'all'))
      .map(([source, t]) => [
        source,
        String(t.pages),
        ...TURNS.map((turn) => `${percent(errorRate(...(t.errors.get(turn) ?? [])))} (${t.righted.get(turn) ?? 0})`),
        (t.checkMs / t.pages).toFixed(0),
        percent(t.checkMs / t.pageMs),
      ]),
  ),
);
if (missed.length > 0) console.log(`\nNot turned back upright: ${missed.join(', ')}.`);
