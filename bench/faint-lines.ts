// How faint the laid-out lines of the htr-pages are against their page's writing, for the lines
// the ground truth transcribes and for the others: what `layout.faintLineRatio` in the default
// manifest was chosen on, and why the detector's lines of a handwritten page keep every line
// (docs/recognition.md, "Faint lines"). The default setup's segmenter and its detector lay out
// each page with every line kept; each line's ink contrast as a share of the
// page median (src/recognition/layout/ink-contrast.ts) is counted by whether it is right (>= 50 % of
// it on ground-truth lines, bench/lib/line-coverage.ts) and, for the right ones, whether the
// ground-truth line it lies on has text.
//
//   node bench/faint-lines.ts [--dataset DIR] [--splits val,train] [--ratios 0.2,0.25,0.3,0.4]
//
// Reads ../shared/datasets/htr-pages (present in CI and on development machines, not in a clone).
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readFile } from 'node:fs/promises';
import { loadConfig } from '../src/platform/config.ts';
import { prepareImage } from '../src/recognition/image/prepare-image.ts';
import { contrastRatios } from '../src/recognition/layout/ink-contrast.ts';
import { defaultModelSpec } from '../src/recognition/models/default-model.ts';
import { OcrEngine } from '../src/recognition/engine/ocr-engine.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset } from './lib/htr-pages.ts';
import { lineCoverage } from './lib/line-coverage.ts';
import { markdownTable } from './lib/table.ts';

interface Counted {
  /** Ratios of right lines on transcribed ground truth, with their ground-truth characters. */
  transcribed: { ratio: number; characters: number }[];
  /** Ratios of lines not right. */
  wrong: { ratio: number; outside: boolean }[];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dataset: { type: 'string', default: DEFAULT_HTR_PAGES },
      splits: { type: 'string', default: 'val,train' },
      ratios: { type: 'string', default: '0.15,0.2,0.25,0.3,0.4,0.5' },
    },
  });
  const ratios = values.ratios.split(',').map(Number);
  const maxPixels = loadConfig().limits.maxImagePixels;
  const spec = defaultModelSpec();
  const settings = { threads: Math.max(1, os.availableParallelism()), concurrency: 1 };
  // Every line kept, so that the counts show what a ratio would drop.
  const keepAll = { ...spec, layout: { faintLineRatio: 0 } };
  const segmenting = await OcrEngine.load(keepAll, settings);
  const detecting = await OcrEngine.load({ ...keepAll, segmentation: null }, settings);
  const counts = new Map<string, Counted>();
  try {
    for (const split of values.splits.split(',')) {
      const pages = pagesFromDataset(values.dataset, split, path.join(os.tmpdir(), 'hwr-faint-lines', split));
      for (const page of pages) {
        const prepared = await prepareImage(await readFile(page.imagePath), { name: page.name, maxPixels });
        const truth = page.truth.regions.flatMap((region) => region.lines);
        const regions = page.truth.regions.map((region) => region.polygon).filter((polygon) => polygon.length >= 3);
        for (const [layoutBy, engine] of [
          ['segmenter', segmenting],
          ['detector', detecting],
        ] as const) {
          const lines = (await engine.layout(prepared.raster)).flatMap((region) => region.lines);
          const polygons = lines.map((line) => line.polygon);
          const lineRatios = contrastRatios(prepared.raster, polygons);
          const coverage = lineCoverage(
            prepared.raster.width,
            prepared.raster.height,
            truth.map((line) => line.polygon),
            polygons,
            regions,
          );
          const key = `${split}, ${layoutBy}`;
          const counted = counts.get(key) ?? { transcribed: [], wrong: [] };
          counts.set(key, counted);
          lineRatios.forEach((ratio, index) => {
            const match = coverage.matches[index];
            const characters = match >= 0 ? (truth[match].text ?? '').trim().length : 0;
            if (!coverage.right[index]) counted.wrong.push({ ratio, outside: coverage.outside[index] });
            else if (characters > 0) counted.transcribed.push({ ratio, characters });
          });
        }
      }
      console.error(`${split}: ${pages.length} pages`);
    }
  } finally {
    await Promise.all([segmenting.close(), detecting.close()]);
  }
  const rows: string[][] = [];
  for (const [key, counted] of counts) {
    for (const ratio of ratios) {
      const lost = counted.transcribed.filter((line) => line.ratio < ratio);
      const dropped = counted.wrong.filter((line) => line.ratio < ratio);
      rows.push([
        key,
        `< ${ratio}`,
        `${lost.length} of ${counted.transcribed.length}`,
        String(lost.reduce((sum, line) => sum + line.characters, 0)),
        `${dropped.length} of ${counted.wrong.length}`,
        String(dropped.filter((line) => line.outside).length),
      ]);
    }
    const lowest = counted.transcribed.map((line) => line.ratio).sort((a, b) => a - b)[0];
    console.log(`${key}: lowest ratio of a transcribed line ${lowest?.toFixed(3) ?? '-'}`);
  }
  console.log(
    `\n${markdownTable(
      [
        'pages, layout',
        'ink contrast / page median',
        'transcribed lines under it',
        'their characters',
        'wrong lines under it',
        'of them outside every region',
      ],
      rows,
    )}`,
  );
}

if (import.meta.main) await main();
