// Memory admission by pixels, from outside (docs/benchmarks.md, "Memory per page"): the service
// started as the README says, WORKER_CONCURRENCY=4, one job of four pages per run, a fresh
// service per run so that its peak resident memory (VmHWM) belongs to that job alone:
//  - four ordinary pages (a handwritten fixture page, 3,345 × 4,365, 14.6 Mpx);
//  - four 100 Mpx pages (10,000 × 10,000 PNG with a few strokes) with MAX_PIXELS_IN_FLIGHT=100000000;
//  - the same four large pages with a budget that lets them all in at once (the peer: no admission);
//  - four 100 Mpx JPEG pages (the fixture page enlarged to 8,750 × 11,420) all admitted at once.
// Since issue 43 a page over 24 Mpx is decoded reduced to 24 Mpx (ADR 0040), and weighs that much.
// Where --before DIR names another checkout (a git worktree of an earlier commit), each row runs
// its service too, one after the other, so that both see the same machine.
//
// `npm run bench:memory-admission`
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { parseArgs } from 'node:util';
import { startService, zipOf } from './lib/service.ts';

const { values } = parseArgs({ options: { before: { type: 'string' } } });
const checkouts: Array<[string, string | undefined]> = [
  ...(values.before ? [['before', values.before] as [string, string]] : []),
  ['ours', undefined],
];

const fixture = path.resolve(import.meta.dirname, '../test/fixtures/pages/peraire_test_B.12.japon3_0048.jpg');
const ordinary = await readFile(fixture);
const large = await largePage();
const largeJpeg = await sharp(ordinary).resize(8750, 11420).jpeg({ quality: 85 }).toBuffer();

console.log(
  `# hwr memory admission (${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB, load ${os.loadavg()[0].toFixed(1)}; WORKER_CONCURRENCY=4)\n`,
);
console.log('| pages | checkout | MAX_PIXELS_IN_FLIGHT | ended | wall s | service peak RSS MiB |');
console.log('|---|---|---:|---|---:|---:|');
const rows: Array<[string, Buffer, string, string]> = [
  ['4 ordinary (14.6 Mpx JPEG)', ordinary, '.jpg', '100000000'],
  ['4 large (100 Mpx PNG, 160 KiB each)', large, '.png', '100000000'],
  ['4 large, all admitted at once (peer)', large, '.png', '400000000'],
  [`4 large JPEG (100 Mpx, ${(largeJpeg.length / 2 ** 20).toFixed(1)} MiB each), all admitted at once`, largeJpeg, '.jpg', '400000000'],
];
for (const [label, page, extension, budget] of rows)
  for (const [name, dir] of checkouts) await run(label, name, dir, page, extension, budget);
console.log(`\nload average after: ${os.loadavg()[0].toFixed(1)}`);

async function run(label: string, name: string, dir: string | undefined, page: Buffer, extension: string, budget: string): Promise<void> {
  const service = await startService({ WORKER_CONCURRENCY: '4', MAX_PIXELS_IN_FLIGHT: budget, PAGE_RETRY_LIMIT: '0' }, 'all', dir);
  try {
    const zip = await zipOf([1, 2, 3, 4].map((n) => ({ name: `${n}${extension}`, body: page })));
    const started = performance.now();
    const status = await service.waitForEnd(await service.submit(zip));
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `| ${label} | ${name} (load ${os.loadavg()[0].toFixed(1)}) | ${Number(budget).toLocaleString('en')} | ${status.state}${status.error_message ? ` (${status.error_message})` : ''} | ${seconds.toFixed(1)} | ${(await service.peakRssMiB()).toFixed(0)} |`,
    );
  } finally {
    await service.stop();
  }
}

async function largePage(): Promise<Buffer> {
  const side = 10_000;
  const strokes = Array.from(
    { length: 12 },
    (_, i) => `<rect x="800" y="${800 + i * 700}" width="${6000 + (i % 3) * 900}" height="60" fill="#222"/>`,
  ).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${side}" height="${side}"><rect width="${side}" height="${side}" fill="#fff"/>${strokes}</svg>`;
  return sharp(Buffer.from(svg), { limitInputPixels: false }).greyscale().png({ compressionLevel: 9, palette: true }).toBuffer();
}
