// The job-scale check from outside (docs/benchmarks.md, "Job scale"): the service started as the
// README says (`hwr serve`, embedded PostgreSQL, real page pipeline, no correction provider),
// one job of N small generated pages per size, submitted over HTTP as a ZIP and polled like a
// client; then its event history, read through the events API, must hold every page once.
//
// `npm run bench:job-scale-service [-- --pages 50,1000] [-- --concurrency 64] [-- --retries 0]`
import os from 'node:os';
import sharp from 'sharp';
import { startService, zipOf } from './lib/service.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const sizes = option('--pages', '50,1000').split(',').map(Number);
const concurrency = option('--concurrency', '64');
const retries = option('--retries', '0');

const service = await startService({ WORKER_CONCURRENCY: concurrency, PAGE_RETRY_LIMIT: retries });
try {
  console.log(
    `# hwr job scale from outside (${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}; WORKER_CONCURRENCY=${concurrency}, PAGE_RETRY_LIMIT=${retries}, real pipeline, no correction)\n`,
  );
  console.log('| pages | ended | wall s | ms/page | PageCompleted events | pages completed once | JobSucceeded |');
  console.log('|---:|---|---:|---:|---:|---|---:|');
  const page = await smallPage();
  for (const pages of sizes) {
    const zip = await zipOf(Array.from({ length: pages }, (_, i) => ({ name: `${String(i + 1).padStart(4, '0')}.png`, body: page })));
    const started = performance.now();
    const jobId = await service.submit(zip);
    const status = await service.waitForEnd(jobId);
    const seconds = (performance.now() - started) / 1000;
    const events = await service.events(jobId);
    const completed = events.filter((event) => event.type === 'PageCompleted').map((event) => event.data.page);
    const once = new Set(completed).size === completed.length && completed.length === pages;
    const succeeded = events.filter((event) => event.type === 'JobSucceeded').length;
    console.log(
      `| ${pages} | ${status.state}${status.error_message ? ` (${status.error_message})` : ''} | ${seconds.toFixed(1)} | ${((seconds * 1000) / pages).toFixed(0)} | ${completed.length} | ${once ? 'yes' : 'NO'} | ${succeeded} |`,
    );
  }
} finally {
  await service.stop();
}

/** A small scanned-looking page: a few dark strokes on paper. */
async function smallPage(): Promise<Buffer> {
  const strokes = [30, 70, 110].map((y) => `<rect x="30" y="${y}" width="${240 - y}" height="6" fill="#222"/>`).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="160"><rect width="320" height="160" fill="#f4f1ea"/>${strokes}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}
