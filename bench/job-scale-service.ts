// The job-scale check from outside (docs/benchmarks.md, "Job scale"): the service started as the
// README says (`hwr serve`, embedded PostgreSQL, real page pipeline, no correction provider),
// one job of N small generated pages per size, submitted over HTTP as a ZIP and polled like a
// client; then its event history, read through the events API, must hold every page once.
//
// `npm run bench:job-scale-service [-- --pages 50,1000] [-- --concurrency 64] [-- --retries 0]`
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import yazl from 'yazl';
import { freePort } from '../src/db/embedded-postgres.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const sizes = option('--pages', '50,1000').split(',').map(Number);
const concurrency = option('--concurrency', '64');
const retries = option('--retries', '0');
const root = path.resolve(import.meta.dirname, '..');

const dir = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-service-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const service = spawn(process.execPath, ['src/cli/main.ts', 'serve'], {
  cwd: root,
  env: {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dir,
    PORT: String(port),
    HOST: '127.0.0.1',
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    WORKER_CONCURRENCY: concurrency,
    PAGE_RETRY_LIMIT: retries,
    CORRECTION_PROVIDER: 'none',
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const key = await new Promise<string>((resolve, reject) => {
  let out = '';
  service.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const match = /API key:\s+(\S+)/.exec(out);
    if (match) resolve(match[1]);
  });
  service.once('exit', (code) => reject(new Error(`the service exited (${code}) before printing its key`)));
});

try {
  await waitReady();
  console.log(
    `# hwr job scale from outside (${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}; WORKER_CONCURRENCY=${concurrency}, PAGE_RETRY_LIMIT=${retries}, real pipeline, no correction)\n`,
  );
  console.log('| pages | ended | wall s | ms/page | PageCompleted events | pages completed once | JobSucceeded |');
  console.log('|---:|---|---:|---:|---:|---|---:|');
  const page = await smallPage();
  for (const pages of sizes) {
    const zip = await zipOf(pages, page);
    const started = performance.now();
    const form = new FormData();
    form.append('scan_zip', new Blob([zip], { type: 'application/zip' }), 'pages.zip');
    const submitted = await fetch(`${base}/v1/process-scan`, { method: 'POST', headers: { 'X-API-Key': key }, body: form });
    if (submitted.status !== 202) throw new Error(`submit: ${submitted.status} ${await submitted.text()}`);
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    let status: { state: string; error_message?: string | null } = { state: 'queued' };
    while (status.state === 'queued' || status.state === 'processing') {
      await new Promise((resolve) => setTimeout(resolve, 500));
      status = (await (await fetch(`${base}/v1/process-scan/${jobId}`, { headers: { 'X-API-Key': key } })).json()) as typeof status;
    }
    const seconds = (performance.now() - started) / 1000;
    const history = (await (await fetch(`${base}/v1/process-scan/${jobId}/events`, { headers: { 'X-API-Key': key } })).json()) as {
      events: Array<{ type: string; data: { page?: number } }>;
    };
    const completed = history.events.filter((event) => event.type === 'PageCompleted').map((event) => event.data.page);
    const once = new Set(completed).size === completed.length && completed.length === pages;
    const succeeded = history.events.filter((event) => event.type === 'JobSucceeded').length;
    console.log(
      `| ${pages} | ${status.state}${status.error_message ? ` (${status.error_message})` : ''} | ${seconds.toFixed(1)} | ${((seconds * 1000) / pages).toFixed(0)} | ${completed.length} | ${once ? 'yes' : 'NO'} | ${succeeded} |`,
    );
  }
} finally {
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
  await rm(dir, { recursive: true, force: true });
}

async function waitReady(): Promise<void> {
  for (let tries = 0; tries < 300; tries++) {
    const ready = await fetch(`${base}/readyz`).catch(() => null);
    if (ready?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the service did not become ready');
}

/** A small scanned-looking page: a few dark strokes on paper. */
async function smallPage(): Promise<Buffer> {
  const strokes = [30, 70, 110]
    .map((y) => `<rect x="30" y="${y}" width="${240 - y}" height="6" fill="#222"/>`)
    .join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="160"><rect width="320" height="160" fill="#f4f1ea"/>${strokes}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

async function zipOf(pages: number, page: Buffer): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (let n = 1; n <= pages; n++) zip.addBuffer(page, `${String(n).padStart(4, '0')}.png`);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
