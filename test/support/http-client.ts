// The HTTP API under test: a runtime on a test database served on a real port, and a
// client (global fetch, FormData, Blob) that checks every response against the
// service's OpenAPI document before handing it to the test.
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after } from 'node:test';
import yazl from 'yazl';
import { createApiKey, createAccount } from '../../src/use-cases/accounts.ts';
import type { Config } from '../../src/platform/config.ts';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { startHttpServer, type RunningServer } from '../../src/server/http-server.ts';
import type { ExportPipeline, PagePipeline } from '../../src/pipeline/pipeline.ts';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.ts';
import { startTestRuntime, testConfig } from './engine.ts';
import { OpenApiValidator } from './openapi-validator.ts';

export const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
export const ZIP_FIXTURES = path.join(FIXTURES, 'zips');

/** Settings every API test starts from: fast polling, quick callback retries, local webhooks. */
export const API_TEST_ENV: Record<string, string> = {
  PAGE_RETRY_LIMIT: '0',
  CALLBACK_RETRY_SCALE: '0.002',
  CALLBACK_TIMEOUT_MS: '5000',
  WEBHOOK_ALLOW_HTTP: '1',
  WEBHOOK_ALLOW_PRIVATE: '1',
};

const running = new Set<ApiServer>();
// Registered when this module loads, before a test file creates its database: `after` hooks
// run in the order they were registered, so every server still running stops here, before
// createTestDatabase's own hook drops the database under it.
after(async () => {
  for (const server of [...running].reverse()) await server.close();
});

export interface ApiServer {
  runtime: Runtime;
  config: Config;
  baseUrl: string;
  client: ApiClient;
  /** Stops the server (in-flight requests finish) and its runtime; a second call waits for the first. */
  close(): Promise<void>;
}

/**
 * Starts a runtime (with workers when `pipelines` is given) and serves the app on a free
 * port of 127.0.0.1, with BASE_URL set to it so that status_url and result_url work.
 */
export async function startApiServer(
  databaseUrl: string,
  options: {
    env?: Record<string, string>;
    pipelines?: { page: PagePipeline; export: ExportPipeline; close?(): Promise<void> };
    /** Start the trainer role too (docs/models.md), with these test settings. */
    trainer?: Pick<RuntimeOptions, 'trainer' | 'trainerTuning'>;
  } = {},
): Promise<ApiServer> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const scheme = options.env?.TLS_CERT_FILE ? 'https' : 'http';
    const baseUrl = `${scheme}://127.0.0.1:${port}`;
    const config = await testConfig(databaseUrl, {
      ...API_TEST_ENV,
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: baseUrl,
      ...options.env,
    });
    const runtime = await startTestRuntime(config, options.pipelines, options.trainer);
    let server: RunningServer;
    try {
      server = await startHttpServer(runtime, port, '127.0.0.1');
    } catch (error) {
      await runtime.stop();
      // Another process took the port between freePort() and listen(): pick another.
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 5) continue;
      throw error;
    }
    let closing: Promise<void> | null = null;
    const api: ApiServer = {
      runtime,
      config,
      baseUrl,
      client: new ApiClient(baseUrl),
      close: () =>
        (closing ??= (async () => {
          running.delete(api);
          await server.close();
          await runtime.stop();
          // A data directory made for this server (not one handed in) goes with it.
          if (!options.env?.DATA_DIR) await rm(config.dataDir, { recursive: true, force: true });
        })()),
    };
    running.add(api);
    return api;
  }
}

export interface Credentials {
  accountName: string;
  accountId: string;
  webhookSecret: string;
  key: string;
  keyId: string;
}

/** A new account with one API key, the way `hwr accounts create` and `hwr keys create` make them. */
export async function createCredentials(runtime: Runtime, accountName = `api-${randomUUID().slice(0, 8)}`): Promise<Credentials> {
  const account = await createAccount(runtime.bus, accountName, 'test');
  const key = await createApiKey(runtime.bus, accountName, 'test key', 'test');
  return { accountName, accountId: account.accountId, webhookSecret: account.webhookSecret, key: key.key, keyId: key.keyId };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON for JSON bodies; the raw bytes otherwise. */
  body: T;
  raw: Buffer;
}

export type Auth = { key: string; scheme?: 'x-api-key' | 'bearer' } | null;

export class ApiClient {
  readonly baseUrl: string;
  readonly validator: OpenApiValidator;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
    this.validator = new OpenApiValidator(baseUrl);
  }

  /** Any request; the response is checked against the OpenAPI document. */
  async request(
    method: string,
    pathOrUrl: string,
    init: { auth?: Auth; headers?: Record<string, string>; body?: FormData | Blob | string } = {},
  ): Promise<ApiResponse> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : `${this.baseUrl}${pathOrUrl}`;
    const headers: Record<string, string> = { ...init.headers };
    if (init.auth) {
      if (init.auth.scheme === 'bearer') headers.Authorization = `Bearer ${init.auth.key}`;
      else headers['X-API-Key'] = init.auth.key;
    }
    const response = await fetch(url, { method, headers, body: init.body, redirect: 'manual' });
    const raw = Buffer.from(await response.arrayBuffer());
    this.validator.check(method, url, response, raw);
    const type = response.headers.get('content-type') ?? '';
    const body = /json/.test(type) && raw.length > 0 ? JSON.parse(raw.toString('utf8')) : raw;
    return { status: response.status, headers: response.headers, body, raw };
  }

  get(pathOrUrl: string, auth: Auth, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.request('GET', pathOrUrl, { auth, headers });
  }

  delete(pathOrUrl: string, auth: Auth): Promise<ApiResponse> {
    return this.request('DELETE', pathOrUrl, { auth });
  }

  /** POST /v1/process-scan with `zip` as scan_zip (omitted when null) and the given form fields. */
  submit(
    zip: Buffer | null,
    auth: Auth,
    fields: Record<string, string> = {},
    headers: Record<string, string> = {},
    fileName?: string,
  ): Promise<ApiResponse> {
    return this.request('POST', '/v1/process-scan', { auth, headers, body: scanForm(zip, fields, fileName) });
  }
}

export function scanForm(zip: Buffer | null, fields: Record<string, string> = {}, fileName = 'scan.zip'): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (zip) form.append('scan_zip', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), fileName);
  return form;
}

/** A ZIP written with yazl, in memory. */
// A fixed entry time: yazl stamps entries with the current time (2 s resolution), so two ZIPs of the
// same files made a moment apart could differ in bytes, and an Idempotency-Key replay of "the same
// request" would be refused as a different one (a flaky test before this).
const ZIP_ENTRY_TIME = new Date('2026-01-01T00:00:00Z');

/** The same entries always give the same bytes. */
export function makeZip(entries: Array<{ name: string; data: Buffer }>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const entry of entries) zip.addBuffer(entry.data, entry.name, { mtime: ZIP_ENTRY_TIME });
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}

/** A ZIP of real page images (the intake fixtures' handwriting strips) under the given names. */
export async function pagesZip(names: string[]): Promise<Buffer> {
  const images = await Promise.all([1, 2, 3, 4, 5].map((n) => readFile(path.join(ZIP_FIXTURES, 'images', `line-${n}.jpg`))));
  return makeZip(names.map((name, index) => ({ name, data: images[index % images.length] })));
}

export function readZipFixture(name: string): Promise<Buffer> {
  return readFile(path.join(ZIP_FIXTURES, name));
}

/** Polls GET status until the job is in one of `states`; every poll is a checked HTTP response. */
export async function waitForStatus(
  client: ApiClient,
  auth: Auth,
  jobId: string,
  until: (body: any) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await client.get(`/v1/process-scan/${jobId}`, auth);
    if (response.status === 200 && until(response.body)) return response.body;
    if (Date.now() > deadline)
      throw new Error(`job ${jobId}: ${what} not reached after ${timeoutMs} ms; last status ${JSON.stringify(response.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function waitForState(client: ApiClient, auth: Auth, jobId: string, states: string[], timeoutMs?: number): Promise<any> {
  return waitForStatus(client, auth, jobId, (body) => states.includes(body.state), `state ${states.join('|')}`, timeoutMs);
}
