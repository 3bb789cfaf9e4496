// HTTP API benchmark (figures for docs/benchmarks.md, "HTTP API"):
//  1. status GETs per second and their latency (p50, p99) with autocannon, a few connections,
//     against `hwr serve --role api` run as its own process on a fresh embedded PostgreSQL;
//     the same with wrk when it is installed; /healthz (no key, no database) as the ceiling
//     of the HTTP stack on this machine. Each row also gives the CPU time the API process and
//     PostgreSQL spent per request (from /proc): throughput on a shared machine moves with
//     the other load, CPU per request much less, so that is the figure to compare versions by;
//  2. submission latency (p50, p99) of a 20-page ZIP of real scans (../shared/fixtures/pages,
//     the ten page images twice, as bench/intake.ts), next to intakeScanZip alone on the
//     same file (the part of a submission that is not HTTP, auth or the database).
// Run: npm run bench:http [-- --seconds 10 --connections 10 --submissions 10 --pages DIR --profile DIR]
// (--profile DIR: the API process writes a V8 CPU profile of the whole run into DIR.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import yazl from 'yazl';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { createAccount, createApiKey } from '../src/use-cases/accounts.ts';
import { loadConfig } from '../src/platform/config.ts';
import { freePort, startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { intakeScanZip } from '../src/intake/scan-zip.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startRuntime } from '../src/runtime/runtime.ts';
import { markdownTable } from './lib/table.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? Number(args[index + 1]) : fallback;
};
const seconds = option('seconds', 10);
const connections = option('connections', 10);
const submissions = option('submissions', 10);
const root = path.resolve(import.meta.dirname, '..');
const pagesDir = args.includes('--pages')
  ? path.resolve(args[args.indexOf('--pages') + 1])
  : path.resolve(root, '../shared/fixtures/pages');
const profileDir = args.includes('--profile') ? path.resolve(args[args.indexOf('--profile') + 1]) : null;

const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-http-'));
const database = await startEmbeddedPostgres({ dataDir: path.join(work, 'pg'), port: await freePort() });
let server: ChildProcess | null = null;

try {
  const dataDir = path.join(work, 'data');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    PORT: String(port),
    HOST: '127.0.0.1',
    BASE_URL: baseUrl,
    // The status read's own throughput, not the per-key rate limit's refusals (docs/operations.md, "Limits").
    RATE_LIMIT_PER_SECOND: '0',
  };

  // An account and a key, made the way `hwr accounts create` / `hwr keys create` make them.
  const admin = await startRuntime(loadConfig(env), createLogger('silent'), { workers: false });
  await createAccount(admin.bus, 'bench');
  const { key } = await createApiKey(admin.bus, 'bench', 'bench');

  const nodeFlags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  server = spawn(process.execPath, [...nodeFlags, path.join(root, 'src/cli/main.ts'), 'serve', '--role', 'api'], {
    cwd: root,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`${baseUrl}/healthz`);

  const zip20 = await twentyPageZip(path.join(work, 'scan-20.zip'));
  const zipBytes = (await stat(zip20)).size;
  const zipBody = await readFile(zip20);

  // A job to poll: the first submission of the 20-page ZIP (no workers run: it stays queued).
  const submitLatencies: number[] = [];
  let jobId = '';
  for (let run = 0; run < submissions; run += 1) {
    const form = new FormData();
    form.append('scan_zip', new Blob([new Uint8Array(zipBody)], { type: 'application/zip' }), 'scan-20.zip');
    const started = performance.now();
    const response = await fetch(`${baseUrl}/v1/process-scan`, { method: 'POST', headers: { 'X-API-Key': key }, body: form });
    const body = (await response.json()) as { job_id: string; page_count: number };
    submitLatencies.push(performance.now() - started);
    if (response.status !== 202 || body.page_count !== 20) throw new Error(`submission failed: ${response.status} ${JSON.stringify(body)}`);
    jobId ||= body.job_id;
  }

  // Intake alone on the same file, for comparison.
  const intakeLatencies: number[] = [];
  const limits = loadConfig({}).limits;
  for (let run = 0; run < submissions; run += 1) {
    const blobs = new FilesystemBlobStore(path.join(work, `intake-${run}`));
    const started = performance.now();
    await intakeScanZip(zip20, { limits, blobs, keyPrefix: 'jobs/bench/pages' });
    intakeLatencies.push(performance.now() - started);
    await rm(path.join(work, `intake-${run}`), { recursive: true, force: true });
  }
  await admin.stop();

  const statusUrl = `${baseUrl}/v1/process-scan/${jobId}`;
  const check = await fetch(statusUrl, { headers: { 'X-API-Key': key } });
  if (check.status !== 200) throw new Error(`status GET failed: ${check.status}`);
  await check.arrayBuffer();

  const measure = (load: () => Promise<LoadResult | null>) => measureCpu(server!.pid!, path.join(work, 'pg'), load);
  await cannon(statusUrl, { 'X-API-Key': key }, 2); // warm-up (JIT, connection pool)
  const status = (await measure(() => cannon(statusUrl, { 'X-API-Key': key }, seconds)))!;
  const statusBearer = (await measure(() => cannon(statusUrl, { Authorization: `Bearer ${key}` }, seconds)))!;
  const health = (await measure(() => cannon(`${baseUrl}/healthz`, {}, seconds)))!;
  const wrk = await measure(async () => runWrk(statusUrl, { 'X-API-Key': key }, seconds));
  const wrkHealth = wrk ? await measure(async () => runWrk(`${baseUrl}/healthz`, {}, seconds)) : null;

  const row = (label: string, result: Measured, latency: (value: number) => string) => [
    label,
    fmt(result.rps),
    latency(result.p50),
    latency(result.p99),
    String(result.errors),
    result.apiCpuMs === null ? 'n/a' : result.apiCpuMs.toFixed(3),
    result.postgresCpuMs === null ? 'n/a' : result.postgresCpuMs.toFixed(3),
  ];
  const rows = [
    row('GET status (X-API-Key), autocannon', status, wholeMs),
    row('GET status (Bearer), autocannon', statusBearer, wholeMs),
    ...(wrk ? [row('GET status (X-API-Key), wrk', wrk, ms)] : []),
    row('GET /healthz (no key, no database), autocannon', health, wholeMs),
    ...(wrkHealth ? [row('GET /healthz (no key, no database), wrk', wrkHealth, ms)] : []),
  ];
  console.log(
    `\nmachine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os
      .loadavg()
      .map((value) => value.toFixed(1))
      .join(' ')}; Node ${process.version}`,
  );
  console.log(`API: hwr serve --role api (own process), embedded PostgreSQL; ${connections} connections, ${seconds} s per row\n`);
  console.log(markdownTable(['load', 'requests/s', 'p50', 'p99', 'errors', 'API CPU ms/req', 'PostgreSQL CPU ms/req'], rows));
  console.log('(autocannon records latency in whole milliseconds; wrk in microseconds)');
  console.log(`\nstatus / healthz throughput: ${(status.rps / health.rps).toFixed(2)}`);
  console.log(`aim: >= 3000 status GETs/s with p99 < 20 ms: ${status.rps >= 3000 && status.p99 < 20 ? 'met' : 'NOT met'}\n`);
  console.log(
    markdownTable(
      [`submission of a 20-page ZIP (${(zipBytes / 1e6).toFixed(1)} MB), ${submissions} runs`, 'p50', 'p99'],
      [
        [
          'POST /v1/process-scan, 202 (upload, intake, store, append)',
          ms(percentile(submitLatencies, 50)),
          ms(percentile(submitLatencies, 99)),
        ],
        ['intakeScanZip alone (same file, in process)', ms(percentile(intakeLatencies, 50)), ms(percentile(intakeLatencies, 99))],
      ],
    ),
  );
} finally {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await database.stop();
  await rm(work, { recursive: true, force: true });
}

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  requests: number;
}

type Measured = LoadResult & { apiCpuMs: number | null; postgresCpuMs: number | null };

/** CPU time (user + system, from /proc) of the API process and of the PostgreSQL cluster, per request of a load. */
async function measureCpu(apiPid: number, pgDir: string, load: () => Promise<LoadResult | null>): Promise<Measured | null> {
  const before = sampleCpu(apiPid, pgDir);
  const result = await load();
  const after = sampleCpu(apiPid, pgDir);
  if (result === null) return null;
  const perRequest = (a: number | null, b: number | null) =>
    a === null || b === null || result.requests === 0 ? null : (b - a) / result.requests;
  return { ...result, apiCpuMs: perRequest(before.api, after.api), postgresCpuMs: perRequest(before.postgres, after.postgres) };
}

function sampleCpu(apiPid: number, pgDir: string): { api: number | null; postgres: number | null } {
  const msPerTick = 1000 / 100; // USER_HZ is 100 on Linux
  try {
    const postmaster = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    let postgres = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = procStat(Number(entry));
      if (!stat) continue;
      // The postmaster's children are the backends; its own cutime/cstime hold those that exited.
      if (stat.pid === postmaster) postgres += stat.utime + stat.stime + stat.cutime + stat.cstime;
      else if (stat.ppid === postmaster) postgres += stat.utime + stat.stime;
    }
    const api = procStat(apiPid);
    return { api: api ? (api.utime + api.stime) * msPerTick : null, postgres: postgres * msPerTick };
  } catch {
    return { api: null, postgres: null };
  }
}

function procStat(pid: number): { pid: number; ppid: number; utime: number; stime: number; cutime: number; cstime: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      ppid: Number(fields[1]),
      utime: Number(fields[11]),
      stime: Number(fields[12]),
      cutime: Number(fields[13]),
      cstime: Number(fields[14]),
    };
  } catch {
    return null;
  }
}

async function cannon(url: string, headers: Record<string, string>, duration: number): Promise<LoadResult> {
  const result = await autocannon({ url, headers, connections, duration, pipelining: 1 });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    requests: result.requests.total,
  };
}

/** wrk, when installed, as a second load generator (its own C event loop, not Node's). */
function runWrk(url: string, headers: Record<string, string>, duration: number): LoadResult | null {
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const run = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${duration}s`, '--latency', ...headerArgs, url], { encoding: 'utf8' });
  if (run.error || run.status !== 0) return null;
  const toMs = (value: string, unit: string): number => Number(value) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit];
  const latency = (label: string): number => {
    const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(run.stdout);
    return match ? toMs(match[1], match[2]) : Number.NaN;
  };
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(run.stdout);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(run.stdout);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(run.stdout)?.[1] ?? Number.NaN),
    p50: latency('50'),
    p99: latency('99'),
    errors: Number(non2xx?.[1] ?? 0) + (socketErrors ? socketErrors.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0),
    requests: Number(/(\d+) requests in/.exec(run.stdout)?.[1] ?? 0),
  };
}

async function twentyPageZip(zipPath: string): Promise<string> {
  const images = (await readdir(pagesDir)).filter((name) => /\.(jpg|png|tif)$/.test(name)).sort();
  if (images.length === 0) throw new Error(`no page images in ${pagesDir}`);
  const contents = await Promise.all(images.map((name) => readFile(path.join(pagesDir, name))));
  await new Promise<void>((resolve, reject) => {
    const zip = new yazl.ZipFile();
    for (let page = 0; page < 20; page += 1) {
      const index = page % images.length;
      zip.addBuffer(contents[index], `scan/${page + 1}${path.extname(images[index])}`);
    }
    zip.end();
    zip.outputStream.pipe(createWriteStream(zipPath)).on('close', resolve).on('error', reject);
  });
  return zipPath;
}

async function waitUntilUp(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (server?.exitCode !== null) throw new Error('hwr serve exited');
    if (Date.now() > deadline) throw new Error('hwr serve did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function fmt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** autocannon's histogram counts whole milliseconds: 0 means under 1 ms. */
function wholeMs(value: number): string {
  return value < 1 ? '< 1 ms' : `${value.toFixed(0)} ms`;
}

function ms(value: number): string {
  return `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`;
}
