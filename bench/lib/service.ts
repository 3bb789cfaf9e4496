// The service as a user starts it (`hwr serve`, embedded PostgreSQL in a temporary DATA_DIR),
// as a child process, and the client calls the benchmarks make against it over HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yazl from 'yazl';
import { freePort } from '../../src/db/embedded-postgres.ts';

const root = path.resolve(import.meta.dirname, '../..');

export interface Service {
  baseUrl: string;
  key: string;
  process: ChildProcess;
  /** Peak resident memory of the service process so far (VmHWM), in MiB. */
  peakRssMiB(): Promise<number>;
  submit(zip: Buffer): Promise<string>;
  /** Polls until the job ends; returns its last status body. */
  waitForEnd(jobId: string): Promise<{ state: string; error_message?: string | null }>;
  events(jobId: string): Promise<Array<{ type: string; data: { page?: number } }>>;
  stop(): Promise<void>;
}

export async function startService(env: Record<string, string>): Promise<Service> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-service-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['src/cli/main.ts', 'serve'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      CORRECTION_PROVIDER: 'none',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const key = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /API key:\s+(\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before printing its key`)));
  });
  const headers = { 'X-API-Key': key };
  const service: Service = {
    baseUrl,
    key,
    process: child,
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
    async stop() {
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
