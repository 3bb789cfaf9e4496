// `npm run bench:throughput` (issue 43): the whole service from outside against the tools a user
// would run instead, on the same real pages in the same run.
//
//   node bench/throughput.ts [--pages N] [--jobs K] [--workers W] [--worker-threads T] [--worker-pages P] [--skip-single]
//                            [--no-ocrmypdf] [--no-tesseract]
//
// Pages: the fixture pages (../shared/fixtures/pages: handwritten and printed) and then, up to N
// (default 36), val pages of ../shared/datasets/htr-pages (handwritten), spread over the split.
// Ours: a fresh service started as a user starts it (`hwr serve`, embedded PostgreSQL, its
// defaults: WORKER_CONCURRENCY and ORT_THREADS = the cores; no correction provider), and
// `hwr submit PAGES… --wait --out FILE` as a user runs it, timed from the command's start to the
// archive saved (PageXML, ALTO, PDF/A, text); the client polls every second, so the end is late
// by up to a second. In order: the first job on the fresh service (cold: models load on its first
// page), the same pages again (warm), then K concurrent jobs (the pages split in K, warm).
// With --workers W (default: the cores; 0: none), the service again as it scales out, the way
// Tesseract is run here: `hwr serve --role api` and W processes `hwr serve --role worker`, each
// with cores ÷ W onnxruntime threads and as many pages at once (a process's JavaScript, the beam
// search and the crops, runs on one thread: one process uses one core for it); a job to warm them,
// then the pages as one job and as K (--worker-threads: each worker's ORT_THREADS, default cores ÷ W;
// --worker-pages: its WORKER_CONCURRENCY, default its threads; both at the cores, as each process
// defaults to, is the compose file's default of two worker replicas on one host;
// --skip-single: these rows only). Its CPU and RSS are those of every process of it; its peak
// is the largest sum of their RSS sampled, with the largest process's own peak beside it.
// Time to the first page done: the first PageCompleted event's recorded time (the events API)
// less the submit's start. Peak RSS: the service process (API and workers; the embedded
// PostgreSQL apart), its VmHWM reset before each run (/proc/PID/clear_refs), with samples every
// 250 ms printed as the RSS over time. CPU s/page: the CPU time (user + system) of the service and
// everything under it (the embedded PostgreSQL too), of Tesseract's processes and of OCRmyPDF's
// (GNU time), per page: unlike wall time it hardly moves with what else the machine runs, and its
// ratio is the throughput ratio where the cores are not shared.
// Peers, after ours, on the same pages: Tesseract as run at scale (bench/lib/tesseract.ts: one
// single-threaded process per core, each page's language; text only) and OCRmyPDF
// (bench/lib/ocrmypdf.ts: the pages as one PDF, --jobs = cores, --output-type pdfa-2, the pages'
// languages; its time includes img2pdf). Also one `hwr recognize` of one page in a fresh process
// (what loading costs a cold command).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { listFixturePages } from './lib/fixture-pages.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset } from './lib/htr-pages.ts';
import { ocrmypdfPeer, runOcrmypdf } from './lib/ocrmypdf.ts';
import { mapPool } from './lib/pool.ts';
import { type Service, startService } from './lib/service.ts';
import { aimLines, type ThroughputRow, throughputTable } from './lib/throughput-table.ts';
import { serviceRuntimeEnv } from './lib/runtime-env.ts';
import { runTesseractPool, tesseractVersion } from './lib/tesseract.ts';

interface BenchPage {
  name: string;
  imagePath: string;
  language: string;
  kind: 'handwritten' | 'printed';
}

const { values } = parseArgs({
  options: {
    pages: { type: 'string', default: '36' },
    jobs: { type: 'string', default: '4' },
    workers: { type: 'string' },
    'worker-threads': { type: 'string' },
    'worker-pages': { type: 'string' },
    'skip-single': { type: 'boolean', default: false },
    'no-ocrmypdf': { type: 'boolean', default: false },
    'no-tesseract': { type: 'boolean', default: false },
  },
});
const root = path.resolve(import.meta.dirname, '..');
const cores = os.availableParallelism();
/** Linux's USER_HZ, in which /proc/PID/stat counts CPU time. */
const CLOCK_TICKS = 100;
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-throughput-'));

// the single-process rows whose first pages tell what loading costs a fresh service
const COLD_ROW = 'ours, cold: fresh service, 1 job';
const WARM_ROW = 'ours, warm: 1 job';

try {
  process.exitCode = await main();
} finally {
  await rm(work, { recursive: true, force: true });
}

async function main(): Promise<number> {
  const pages = choosePages(Math.max(1, Number(values.pages) || 36));
  // before our runs, so that a missing tool is said at once, not after minutes
  const ocrmypdfAvailable = values['no-ocrmypdf'] ? null : await ocrmypdfPeer();
  if (ocrmypdfAvailable && 'missing' in ocrmypdfAvailable) console.log(`peer: ${ocrmypdfAvailable.missing}`);
  const jobs = Math.max(1, Math.min(pages.length, Number(values.jobs) || 4));
  const handwritten = pages.filter((page) => page.kind === 'handwritten').length;
  const megapixels = await totalMegapixels(pages);
  console.log(
    `# bench:throughput — ${pages.length} pages (${handwritten} handwritten, ${pages.length - handwritten} printed; ${megapixels.toFixed(0)} Mpx), ` +
      `${cores} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB; ` +
      `load before ${os
        .loadavg()
        .map((load) => load.toFixed(2))
        .join(' ')}; ${new Date().toISOString()}`,
  );

  const rows: ThroughputRow[] = [];
  const timelines: string[] = [];
  let startSeconds: number | null = null;
  if (!values['skip-single']) {
    const startedAt = performance.now();
    const service = await startService({});
    startSeconds = (performance.now() - startedAt) / 1000;
    console.log(`service: hwr serve (role all, embedded PostgreSQL), ready ${startSeconds.toFixed(1)} s after its start`);
    try {
      const cold = await runJobs(service, [pages], 'cold');
      rows.push({ label: COLD_ROW, role: 'ours', ...cold.row });
      timelines.push(`- cold, 1 job: ${cold.timeline}`);
      const warm = await runJobs(service, [pages], 'warm');
      rows.push({ label: WARM_ROW, role: 'ours', ...warm.row });
      timelines.push(`- warm, 1 job: ${warm.timeline}`);
      const split = Array.from({ length: jobs }, (_, job) => pages.filter((_, index) => index % jobs === job));
      const concurrent = await runJobs(service, split, `${jobs} jobs`);
      rows.push({ label: `ours, warm: ${jobs} concurrent jobs`, role: 'ours', ...concurrent.row });
      timelines.push(`- warm, ${jobs} concurrent jobs: ${concurrent.timeline}`);
    } finally {
      await service.stop();
    }
  }
  const workers = Math.max(0, Math.min(cores, Number(values.workers ?? cores) || 0));
  if (workers > 0) {
    const scaled = await startService({}, 'api');
    const threads = String(Math.max(1, Number(values['worker-threads']) || Math.floor(cores / workers)));
    const workerPages = String(Math.max(1, Number(values['worker-pages']) || Number(threads)));
    // METRICS_PORT 0: the processes of one host cannot all listen on the default port
    for (let index = 0; index < workers; index += 1)
      scaled.startWorker({ ORT_THREADS: threads, WORKER_CONCURRENCY: workerPages, METRICS_PORT: '0', LOG_LEVEL: 'warn' });
    const label = `API + ${workers} worker processes (${threads} onnxruntime thread${threads === '1' ? '' : 's'} each, ${workerPages} page${workerPages === '1' ? '' : 's'} at once)`;
    console.log(
      `service, scaled out: hwr serve --role api, and ${workers} × hwr serve --role worker, ORT_THREADS=${threads}, WORKER_CONCURRENCY=${threads}`,
    );
    try {
      await runJobs(scaled, [pages], 'scaled warm-up');
      const one = await runJobs(scaled, [pages], 'scaled, 1 job');
      rows.push({ label: `ours, warm: ${label}, 1 job`, role: 'ours', ...one.row });
      timelines.push(`- warm, ${label}, 1 job: ${one.timeline}`);
      const split = Array.from({ length: jobs }, (_, job) => pages.filter((_, index) => index % jobs === job));
      const concurrent = await runJobs(scaled, split, `scaled, ${jobs} jobs`);
      rows.push({ label: `ours, warm: ${label}, ${jobs} concurrent jobs`, role: 'ours', ...concurrent.row });
      timelines.push(`- warm, ${label}, ${jobs} concurrent jobs: ${concurrent.timeline}`);
    } finally {
      await scaled.stop();
    }
  }

  const tesseract = values['no-tesseract'] ? null : await tesseractVersion();
  if (tesseract) {
    const pool = await runTesseractPool(pages);
    rows.push({
      label: `Tesseract, ${pool.processes} × 1 thread (text only)`,
      role: 'tesseract',
      pages: pages.length,
      seconds: pool.wallMs / 1000,
      cpuSeconds: pool.cpuSeconds,
      firstPageSeconds: pool.firstDoneMs / 1000,
      peakMiB: pool.peakBytes === null ? null : (pool.peakBytes * pool.processes) / 1024 ** 2,
      peakNote: pool.peakBytes === null ? undefined : `${(pool.peakBytes / 1024 ** 2).toFixed(0)} × ${pool.processes}`,
    });
  }
  const ocrmypdf = ocrmypdfAvailable && 'version' in ocrmypdfAvailable ? ocrmypdfAvailable.version : null;
  let ocrmypdfNote = ocrmypdfAvailable && 'missing' in ocrmypdfAvailable ? ocrmypdfAvailable.missing : '';
  if (ocrmypdf) {
    const run = await runOcrmypdf(pages);
    ocrmypdfNote = `${ocrmypdf}: --jobs ${run.jobs}, --output-type pdfa-2, -l ${run.languages}; img2pdf ${(run.img2pdfMs / 1000).toFixed(1)} s of its time; PDF ${(run.outputBytes / 1024 ** 2).toFixed(1)} MiB`;
    rows.push({
      label: `OCRmyPDF --jobs ${run.jobs} (PDF/A)`,
      role: 'ocrmypdf',
      pages: pages.length,
      seconds: (run.img2pdfMs + run.ocrmypdfMs) / 1000,
      cpuSeconds: run.cpuSeconds,
      firstPageSeconds: null,
      peakMiB: run.peakBytes === null ? null : run.peakBytes / 1024 ** 2,
      peakNote: 'largest process',
    });
  }
  const recognize = await coldRecognize(pages.find((page) => page.kind === 'handwritten') ?? pages[0]!);

  console.log(
    `peers: ${tesseract ?? 'no tesseract'}${tesseract ? ', OMP_THREAD_LIMIT=1, each page its language' : ''}; ${ocrmypdfNote || 'no ocrmypdf'}`,
  );
  console.log(
    `load after ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}\n`,
  );
  console.log(throughputTable(rows));
  console.log('');
  for (const line of aimLines(rows)) console.log(line);
  console.log(
    `- first page done: ours, the first PageCompleted after the submit's start; Tesseract, the first process of its pool to end. ` +
      `Tesseract's peak is one process's × the processes at once.`,
  );
  console.log(
    `- cold start: ${startSeconds === null ? '' : `the service was ready ${startSeconds.toFixed(1)} s after its start (embedded PostgreSQL created); `}` +
      `one \`hwr recognize\` of ${recognize.page} in a fresh process: ${recognize.seconds.toFixed(1)} s (models loaded, one page read).`,
  );
  // the fresh service's first job against the same pages again (not run with --skip-single)
  const cold = rows.find((row) => row.label === COLD_ROW);
  const warm = rows.find((row) => row.label === WARM_ROW);
  if (cold?.firstPageSeconds != null && warm?.firstPageSeconds != null)
    console.log(
      `- the first page done: ${cold.firstPageSeconds.toFixed(1)} s on the fresh service, ${warm.firstPageSeconds.toFixed(1)} s warm: ` +
        `the difference, ${(cold.firstPageSeconds - warm.firstPageSeconds).toFixed(1)} s, is what loading (the models, the language models) costs a new worker's first page, within this run's noise.`,
    );
  console.log('\nService RSS over each run (MiB, samples spread over the run):');
  for (const line of timelines) console.log(line);
  return 0;
}

/** The fixture pages, then val pages spread evenly over the split, up to `count`. */
function choosePages(count: number): BenchPage[] {
  const fixtures: BenchPage[] = listFixturePages().map((page) => ({
    name: page.name,
    imagePath: page.imagePath,
    language: page.language,
    kind: page.kind,
  }));
  if (fixtures.length >= count) return fixtures.slice(0, count);
  let val: BenchPage[] = [];
  try {
    val = pagesFromDataset(DEFAULT_HTR_PAGES, 'val', path.join(work, 'val')).map((page) => ({
      name: page.name,
      imagePath: page.imagePath,
      language: page.language,
      kind: 'handwritten',
    }));
  } catch (error) {
    console.error(`no val pages (${(error as Error).message}): the fixture pages alone`);
  }
  const wanted = Math.min(val.length, count - fixtures.length);
  const spread = Array.from({ length: wanted }, (_, index) => val[Math.floor((index * val.length) / wanted)]!);
  return [...fixtures, ...spread];
}

async function totalMegapixels(pages: BenchPage[]): Promise<number> {
  const { default: sharp } = await import('sharp');
  let total = 0;
  for (const page of pages) {
    const meta = await sharp(page.imagePath).metadata();
    total += ((meta.width ?? 0) * (meta.height ?? 0)) / 1e6;
  }
  return total;
}

/** Each list of pages as one `hwr submit --wait --out`, all at once; the service's RSS sampled meanwhile. */
async function runJobs(
  service: Service,
  jobs: BenchPage[][],
  tag: string,
): Promise<{ row: Omit<ThroughputRow, 'label' | 'role'>; timeline: string }> {
  const pids = [service.process.pid!, ...service.workers().map((worker) => worker.pid!)];
  for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  const treesCpu = () => pids.reduce((sum, pid) => sum + treeCpuSeconds(pid), 0);
  const cpuBefore = treesCpu();
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(pids.reduce((sum, pid) => sum + rssMiB(pid, 'VmRSS'), 0)), 250);
  const startedAt = Date.now();
  const started = performance.now();
  const results = await mapPool(jobs, jobs.length, (pages, index) => submit(service, pages, path.join(work, `${tag}-${index}.zip`)));
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = treesCpu() - cpuBefore;
  clearInterval(sampler);
  const ownPeaks = pids.map((pid) => rssMiB(pid, 'VmHWM'));
  const peak = pids.length === 1 ? Math.max(ownPeaks[0]!, ...samples) : Math.max(...samples);
  const peakNote =
    pids.length === 1 ? 'service process' : `${pids.length} processes summed; the largest ${Math.max(...ownPeaks).toFixed(0)}`;
  const failed = results.filter((result) => result.state !== 'done');
  if (failed.length > 0) throw new Error(`${tag}: ${failed.length} job(s) ended ${failed.map((result) => result.state).join(', ')}`);
  const firstDone = Math.min(...(await Promise.all(results.map((result) => firstPageDone(service, result.jobId)))));
  const pageCount = jobs.reduce((sum, pages) => sum + pages.length, 0);
  const archives = results.reduce((sum, result) => sum + result.archiveBytes, 0);
  process.stderr.write(`  ${tag}: ${pageCount} pages in ${seconds.toFixed(1)} s, archives ${(archives / 1024 ** 2).toFixed(1)} MiB\n`);
  const points = 12;
  const timeline = Array.from({ length: Math.min(points, samples.length) }, (_, index) =>
    samples[Math.floor((index * (samples.length - 1)) / Math.max(1, Math.min(points, samples.length) - 1))]!.toFixed(0),
  ).join(' ');
  return {
    row: {
      pages: pageCount,
      seconds,
      cpuSeconds,
      firstPageSeconds: (firstDone - startedAt) / 1000,
      peakMiB: peak,
      peakNote,
    },
    timeline: `${timeline} (peak ${peak.toFixed(0)})`,
  };
}

/**
 * CPU seconds (user + system) of a process and everything under it (the service: its inference
 * worker's threads, the embedded PostgreSQL and its backends), children that ended included
 * (their parents' cutime/cstime). CPU time, unlike wall time, hardly moves with what else the
 * machine runs: it says what the work costs.
 */
function treeCpuSeconds(root: number): number {
  const stats = new Map<number, { parent: number; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // the fields after the command's closing parenthesis: state, ppid, ... utime (14), stime, cutime, cstime
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ').pop()!.split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      stats.set(Number(entry), { parent: Number(fields[1]), ticks });
    } catch {
      // ended while being read
    }
  }
  const inTree = (pid: number): boolean => {
    for (let current = pid; current > 1; current = stats.get(current)?.parent ?? 0) if (current === root) return true;
    return false;
  };
  let ticks = 0;
  for (const [pid, stat] of stats) if (inTree(pid)) ticks += stat.ticks;
  return ticks / CLOCK_TICKS;
}

function rssMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** `hwr submit PAGES… --wait --out FILE`, as a user runs it; its JSON lines give the job and its end. */
function submit(service: Service, pages: BenchPage[], out: string): Promise<{ jobId: string; state: string; archiveBytes: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/cli/main.ts', 'submit', ...pages.map((page) => page.imagePath), '--wait', '--out', out], {
      cwd: root,
      env: { ...process.env, HWR_URL: service.baseUrl, HWR_API_KEY: service.key, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', async (code) => {
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { job_id?: string; state?: string });
      const jobId = lines.find((line) => line.job_id)?.job_id;
      const state = lines.findLast((line) => line.state)?.state ?? 'unknown';
      if (code !== 0 || !jobId) {
        reject(new Error(`hwr submit exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`));
        return;
      }
      resolve({ jobId, state, archiveBytes: (await stat(out)).size });
    });
  });
}

/** When the job's first page was done (ms since the epoch), from its events. */
async function firstPageDone(service: Service, jobId: string): Promise<number> {
  const response = await fetch(`${service.baseUrl}/v1/process-scan/${jobId}/events`, { headers: { 'X-API-Key': service.key } });
  const body = (await response.json()) as { events: { type: string; recorded_at: string }[] };
  const done = body.events.filter((event) => event.type === 'PageCompleted').map((event) => Date.parse(event.recorded_at));
  if (done.length === 0) throw new Error(`job ${jobId}: no PageCompleted event`);
  return Math.min(...done);
}

/** One `hwr recognize` of one page in a fresh process: what loading costs a cold command. */
function coldRecognize(page: BenchPage): Promise<{ page: string; seconds: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/cli/main.ts', 'recognize', page.imagePath], {
      cwd: root,
      // as `npm run hwr -- recognize` runs it (malloc and V8 settings)
      env: { ...process.env, ...serviceRuntimeEnv(), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve({ page: page.name, seconds: (performance.now() - started) / 1000 })
        : reject(new Error(`hwr recognize exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`)),
    );
  });
}
