// The service as a user starts it (`hwr serve`, embedded PostgreSQL in a temporary DATA_DIR),
// as a child process, and the client calls the benchmarks make against it over HTTP.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import yazl from 'yazl';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { serviceRuntimeEnv } from './runtime-env.ts';

const root = path.resolve(import.meta.dirname, '../..');
const execFileAsync = promisify(execFile);

export interface Service {
  baseUrl: string;
  key: string;
  /** The webhook secret of the account `default`, printed at the first start with the key. */
  webhookSecret: string;
  /** DATA_DIR of the service (blobs, temporary uploads, the embedded PostgreSQL). */
  dataDir: string;
  process: ChildProcess;
  /** Runs an operator subcommand (`hwr projections verify`, `hwr billing`) against the service's database. */
  hwr(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Starts one more process, `hwr serve --role worker`, on the same database and DATA_DIR; stopped first by stop(). */
  startWorker(env: Record<string, string>): ChildProcess;
  /** The processes startWorker started. */
  workers(): readonly ChildProcess[];
  /** Peak resident memory of the service process so far (VmHWM), in MiB. */
  peakRssMiB(): Promise<number>;
  submit(zip: Buffer): Promise<string>;
  /** Polls until the job ends; returns its last status body. */
  waitForEnd(jobId: string): Promise<{ state: string; error_message?: string | null }>;
  events(jobId: string): Promise<Array<{ type: string; data: { page?: number } }>>;
  stop(): Promise<void>;
}

/**
 * `role`: `all` (the default, as `npm start`) or `api` (then start workers with `startWorker`);
 * `checkout`: the service of another checkout (a git worktree of an earlier commit) instead of this one.
 */
export async function startService(env: Record<string, string>, role: 'all' | 'api' = 'all', checkout = root): Promise<Service> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-service-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const serviceEnv = {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    CORRECTION_PROVIDER: 'none',
    LOG_LEVEL: 'warn',
    // as `npm start` and the image run it (docs/deployment.md, "Memory")
    ...serviceRuntimeEnv(),
    ...env,
  };
  const child = spawn(process.execPath, ['src/cli/main.ts', 'serve', '--role', role], {
    cwd: checkout,
    env: serviceEnv,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const workers: ChildProcess[] = [];
  const { key, webhookSecret } = await new Promise<{ key: string; webhookSecret: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const key = /API key:\s+(\S+)/.exec(out);
      const secret = /Webhook secret:\s+(\S+)/.exec(out);
      if (key && secret) resolve({ key: key[1], webhookSecret: secret[1] });
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before printing its key`)));
  });
  const headers = { 'X-API-Key': key };
  const service: Service = {
    baseUrl,
    key,
    webhookSecret,
    dataDir,
    process: child,
    async hwr(args) {
      try {
        const { stdout, stderr } = await execFileAsync(process.execPath, ['src/cli/main.ts', ...args], {
          cwd: root,
          env: { ...serviceEnv, LOG_LEVEL: 'warn' },
          maxBuffer: 64 * 1024 * 1024,
        });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const failed = error as { code?: number; stdout?: string; stderr?: string };
        return {
          code: typeof failed.code === 'number' ? failed.code : 1,
          stdout: failed.stdout ?? '',
          stderr: failed.stderr ?? String(error),
        };
      }
    },
    async peakRssMiB() {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    async submit(zip) {
      const form = new FormData();
      form.append('scan_zip', new Blob([zip], { type: 'application/zip' }), 'pages.zip');
      const response = await fetch(`${baseUrl}/v1/process-scan`, { method: 'POST', headers, body: form });
      if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { job_id: string }).job_id;
    },
    async waitForEnd(jobId) {
      for (;;) {
        const status = (await (await fetch(`${baseUrl}/v1/process-scan/${jobId}`, { headers })).json()) as {
          state: string;
          error_message?: string | null;
        };
        if (status.state !== 'queued' && status.state !== 'processing') return status;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
    async events(jobId) {
      const body = (await (await fetch(`${baseUrl}/v1/process-scan/${jobId}/events`, { headers })).json()) as {
        events: Array<{ type: string; data: { page?: number } }>;
      };
      return body.events;
    },
    workers: () => workers,
    startWorker(workerEnv) {
      const worker = spawn(process.execPath, ['src/cli/main.ts', 'serve', '--role', 'worker'], {
        cwd: root,
        env: { ...serviceEnv, ...workerEnv },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      workers.push(worker);
      return worker;
    },
    async stop() {
      // Workers first: the first process owns the embedded PostgreSQL.
      for (const worker of workers) {
        if (worker.exitCode !== null || worker.signalCode !== null) continue;
        worker.kill('SIGTERM');
        await new Promise((resolve) => worker.once('exit', resolve));
      }
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  for (let tries = 0; ; tries++) {
    const ready = await fetch(`${baseUrl}/readyz`).catch(() => null);
    if (ready?.ok) return service;
    if (tries > 300) {
      await service.stop();
      throw new Error('the service did not become ready');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A ZIP, in memory, of the given entries. */
export async function zipOf(entries: Array<{ name: string; body: Buffer }>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const entry of entries) zip.addBuffer(entry.body, entry.name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
