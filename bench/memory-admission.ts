// Memory admission by pixels, from outside (docs/benchmarks.md, "Memory per page"): the service
// started as the README says, WORKER_CONCURRENCY=4, one job of four pages per run, a fresh
// service per run so that its peak resident memory (VmHWM) belongs to that job alone:
//  - four ordinary pages (a handwritten fixture page, 3,345 × 4,365, 14.6 Mpx);
//  - four 100 Mpx pages (10,000 × 10,000 PNG with a few strokes) with MAX_PIXELS_IN_FLIGHT=100000000;
//  - the same four large pages with a budget that lets them all in at once (the peer: no admission).
//
// `npm run bench:memory-admission`
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { startService, zipOf } from './lib/service.ts';

const fixture = path.resolve(import.meta.dirname, '../test/fixtures/pages/peraire_test_B.12.japon3_0048.jpg');
const ordinary = await readFile(fixture);
const large = await largePage();

console.log(
  `# hwr memory admission (${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB, load ${os.loadavg()[0].toFixed(1)}; WORKER_CONCURRENCY=4)\n`,
);
console.log('| pages | MAX_PIXELS_IN_FLIGHT | ended | wall s | service peak RSS MiB |');
console.log('|---|---:|---|---:|---:|');
await run('4 ordinary (14.6 Mpx JPEG)', ordinary, '.jpg', '100000000');
await run('4 large (100 Mpx PNG, 160 KiB each)', large, '.png', '100000000');
await run('4 large, all admitted at once (peer)', large, '.png', '400000000');

async function run(label: string, page: Buffer, extension: string, budget: string): Promise<void> {
  const service = await startService({ WORKER_CONCURRENCY: '4', MAX_PIXELS_IN_FLIGHT: budget, PAGE_RETRY_LIMIT: '0' });
  try {
    const zip = await zipOf([1, 2, 3, 4].map((n) => ({ name: `${n}${extension}`, body: page })));
    const started = performance.now();
    const status = await service.waitForEnd(await service.submit(zip));
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `| ${label} | ${Number(budget).toLocaleString('en')} | ${status.state}${status.error_message ? ` (${status.error_message})` : ''} | ${seconds.toFixed(1)} | ${(await service.peakRssMiB()).toFixed(0)} |`,
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
