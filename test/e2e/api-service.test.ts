// The additive endpoints and cross-cutting behaviour: /v1/usage (billed pages of done
// jobs only), /healthz and /readyz without a key, /v1/openapi.json, and request ids
// echoed in X-Request-Id and in every problem's `instance`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { parse } from 'yaml';
import { openApiDocument } from '../../src/http/openapi.ts';
import { createTestDatabase } from '../support/database.ts';
import {
  createCredentials,
  FIXTURES,
  pagesZip,
  scanForm,
  startApiServer,
  waitForState,
  type ApiServer,
  type Auth,
} from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const pipelines = scriptedPipelines();
const server = await startApiServer(await createTestDatabase(), { pipelines });
after(() => server.close());
const { client, runtime } = server;
const payer = await createCredentials(runtime, 'payer');
const auth: Auth = { key: payer.key };

describe('GET /v1/usage', () => {
  /** The billed jobs: their pages and finish times (from their status). */
  const billed: Array<{ pages: number; finishedAt: string }> = [];

  test('counts the pages of done jobs only; failed and cancelled jobs are not billed', async () => {
    const empty = await client.get('/v1/usage', auth);
    assert.deepEqual(empty.body, {
      account_id: payer.accountId,
      from: null,
      to: null,
      jobs: 0,
      pages: 0,
      models_trained: 0,
      lines_trained: 0,
      correction: [],
    });

    const done1 = (await client.submit(await pagesZip(['1.jpg']), auth)).body;
    const done3 = (await client.submit(await pagesZip(['1.jpg', '2.jpg', '3.jpg']), auth)).body;
    const failed = (await client.submit(await pagesZip(['1.jpg', 'fail-2.jpg']), auth)).body;
    const cancelled = (await client.submit(await pagesZip(['hold-1.jpg', '2.jpg']), auth)).body;
    await waitForState(client, auth, cancelled.job_id, ['processing']);
    assert.equal((await client.delete(cancelled.status_url, auth)).status, 200);
    for (const [job, pages] of [
      [done1, 1],
      [done3, 3],
    ] as const) {
      const status = await waitForState(client, auth, job.job_id, ['done', 'failed']);
      assert.equal(status.state, 'done');
      billed.push({ pages, finishedAt: status.finished_at });
    }
    assert.equal((await waitForState(client, auth, failed.job_id, ['done', 'failed'])).state, 'failed');

    const usage = await client.get('/v1/usage', auth);
    assert.equal(usage.status, 200);
    assert.deepEqual(usage.body, {
      account_id: payer.accountId,
      from: null,
      to: null,
      jobs: 2,
      pages: 4,
      models_trained: 0,
      lines_trained: 0,
      correction: [],
    });
  });

  test('from (inclusive) and to (exclusive) filter by finish time; dates or timestamps', async () => {
    const tomorrow = new Date(Date.now() + 24 * 3600 * 1000).toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 24 * 3600 * 1000).toISOString().slice(0, 10);
    const inRange = await client.get(`/v1/usage?from=${yesterday}&to=${tomorrow}`, auth);
    assert.deepEqual(inRange.body, {
      account_id: payer.accountId,
      from: `${yesterday}T00:00:00.000Z`,
      to: `${tomorrow}T00:00:00.000Z`,
      jobs: 2,
      pages: 4,
      models_trained: 0,
      lines_trained: 0,
      correction: [],
    });
    assert.equal((await client.get(`/v1/usage?from=${tomorrow}`, auth)).body.pages, 0);
    assert.equal((await client.get(`/v1/usage?to=${yesterday}`, auth)).body.pages, 0);
    const now = new Date().toISOString();
    assert.equal((await client.get(`/v1/usage?to=${encodeURIComponent(now)}`, auth)).body.pages, 4);
    // At the boundary: a job finished at exactly `from` counts, one finished at exactly `to` does not.
    assert.equal(billed.length, 2);
    for (const { finishedAt } of billed) {
      const at = encodeURIComponent(finishedAt);
      const from: { jobs: number; pages: number } = (await client.get(`/v1/usage?from=${at}`, auth)).body;
      const to: { jobs: number; pages: number } = (await client.get(`/v1/usage?to=${at}`, auth)).body;
      const atOrAfter = billed.filter((job) => Date.parse(job.finishedAt) >= Date.parse(finishedAt));
      const before = billed.filter((job) => Date.parse(job.finishedAt) < Date.parse(finishedAt));
      assert.deepEqual(
        [from.jobs, from.pages],
        [atOrAfter.length, atOrAfter.reduce((sum, job) => sum + job.pages, 0)],
        `from=${finishedAt} includes the job finished then`,
      );
      assert.deepEqual(
        [to.jobs, to.pages],
        [before.length, before.reduce((sum, job) => sum + job.pages, 0)],
        `to=${finishedAt} excludes the job finished then`,
      );
    }
  });

  test('an invalid date: 400 invalid_date', async () => {
    for (const query of ['from=yesterday', 'to=2025-13-45', 'from=a&to=b']) {
      const response = await client.get(`/v1/usage?${query}`, auth);
      assert.equal(response.status, 400, query);
      assert.equal(response.body.code, 'invalid_date');
    }
  });

  test('another account sees only its own usage', async () => {
    const other = await createCredentials(runtime, 'other');
    assert.deepEqual((await client.get('/v1/usage', { key: other.key })).body, {
      account_id: other.accountId,
      from: null,
      to: null,
      jobs: 0,
      pages: 0,
      models_trained: 0,
      lines_trained: 0,
      correction: [],
    });
  });
});

describe('health', () => {
  test('/healthz and /readyz answer without a key', async () => {
    const health = await client.get('/healthz', null);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    const ready = await client.get('/readyz', null);
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
    assert.equal((await client.get('/healthz', { key: 'hwr_whatever' })).status, 200, 'a bad key does not matter there');
  });

  test('/readyz is 503 when the database is gone, /healthz stays 200', async () => {
    const doomedUrl = await createTestDatabase();
    const doomed = await startApiServer(doomedUrl);
    try {
      assert.equal((await doomed.client.get('/readyz', null)).status, 200);
      const url = new URL(doomedUrl);
      const name = url.pathname.slice(1);
      url.pathname = '/postgres';
      const admin = new pg.Client(url.toString());
      await admin.connect();
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
      const notReady = await doomed.client.get('/readyz', null);
      assert.equal(notReady.status, 503);
      assert.equal(notReady.body.status, 'unavailable');
      assert.equal((await doomed.client.get('/healthz', null)).status, 200);
    } finally {
      await doomed.close().catch(() => {});
    }
  });
});

describe('GET /v1/openapi.json', () => {
  test('the OpenAPI 3.1 document of the whole interface, without a key', async () => {
    const response = await client.get('/v1/openapi.json', null);
    assert.equal(response.status, 200);
    const document = response.body;
    assert.deepEqual(document, JSON.parse(JSON.stringify(openApiDocument(server.baseUrl))));
    assert.equal(document.openapi, '3.1.0');
    assert.deepEqual(document.servers, [{ url: server.baseUrl }]);
    assert.deepEqual(Object.keys(document.components.securitySchemes).sort(), ['ApiKeyHeader', 'BearerAuth']);
    assert.deepEqual(document.components.securitySchemes.ApiKeyHeader, { type: 'apiKey', in: 'header', name: 'X-API-Key' });
    assert.deepEqual(document.components.securitySchemes.BearerAuth, { type: 'http', scheme: 'bearer' });
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => key !== 'parameters')
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    assert.deepEqual(operations.sort(), [
      'DELETE /v1/models/{model_id}',
      'DELETE /v1/process-scan/{job_id}',
      'GET /healthz',
      'GET /readyz',
      'GET /v1/account/default-model',
      'GET /v1/models',
      'GET /v1/models/{model_id}',
      'GET /v1/models/{model_id}/events',
      'GET /v1/openapi.json',
      'GET /v1/process-scan/{job_id}',
      'GET /v1/process-scan/{job_id}/events',
      'GET /v1/process-scan/{job_id}/iiif/manifest',
      'GET /v1/process-scan/{job_id}/iiif/{token}/image/{page}',
      'GET /v1/process-scan/{job_id}/iiif/{token}/image/{page}/info.json',
      'GET /v1/process-scan/{job_id}/iiif/{token}/image/{page}/{region}/{size}/{rotation}/{file}',
      'GET /v1/process-scan/{job_id}/iiif/{token}/manifest',
      'GET /v1/process-scan/{job_id}/iiif/{token}/pages/{page}/{granularity}',
      'GET /v1/process-scan/{job_id}/iiif/{token}/search',
      'GET /v1/process-scan/{job_id}/pages/{page}',
      'GET /v1/process-scan/{job_id}/result',
      'GET /v1/process-scan/{job_id}/timeline',
      'GET /v1/search',
      'GET /v1/usage',
      'POST /v1/models',
      'POST /v1/process-scan',
      'POST /v1/process-scan/{job_id}/models',
      'PUT /v1/account/default-model',
      'PUT /v1/process-scan/{job_id}/pages/{page}/text',
    ]);
    for (const [path, item] of Object.entries(
      document.paths as Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>,
    )) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'parameters') continue;
        const open = Array.isArray(operation.security) && operation.security.length === 0;
        // A signed IIIF URL needs no key but answers 401 for a bad token (docs/iiif.md).
        const signed = path.includes('/iiif/{token}/');
        assert.equal('401' in operation.responses, !open || signed, `${method} ${path}: 401 documented exactly where a key is needed`);
        if (signed) assert.ok(open, `${method} ${path}: a signed URL needs no key`);
      }
    }
    assert.ok(document.webhooks.jobFinished, 'the callback is documented');
    const form = document.paths['/v1/process-scan'].post.requestBody.content['multipart/form-data'].schema;
    assert.deepEqual(Object.keys(form.properties).sort(), [
      'llm_tier',
      'model',
      'pdf_format',
      'pipeline_steps',
      'preset',
      'scan_zip',
      'webhook_url',
    ]);
  });
});

describe('request ids', () => {
  test('an incoming X-Request-Id is echoed and names the request in problem+json instance', async () => {
    const response = await client.get('/v1/process-scan/00000000-0000-4000-8000-000000000000', auth, {
      'X-Request-Id': 'client-req-12345',
    });
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('x-request-id'), 'client-req-12345');
    assert.equal(response.body.instance, 'urn:hwr:request:client-req-12345');
  });

  test('without one (or with an unusable one) the service makes a UUID', async () => {
    for (const incoming of [undefined, 'short', 'has spaces in it', 'x'.repeat(200)]) {
      const response = await client.get('/v1/usage', null, incoming ? { 'X-Request-Id': incoming } : {});
      assert.equal(response.status, 401);
      const id = response.headers.get('x-request-id') ?? '';
      assert.match(id, UUID, String(incoming));
      assert.equal(response.body.instance, `urn:hwr:request:${id}`);
    }
    const ok = await client.get('/healthz', null);
    assert.match(ok.headers.get('x-request-id') ?? '', UUID, 'successful responses carry one too');
  });

  test('each request gets its own id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await client.get('/healthz', null)).headers.get('x-request-id') ?? '');
    assert.equal(ids.size, 5);
  });
});

describe('TLS', () => {
  const certFile = path.join(FIXTURES, 'callbacks', 'localhost-cert.pem');
  const keyFile = path.join(FIXTURES, 'callbacks', 'localhost-key.pem');

  /** A request over HTTPS trusting the test certificate, checked against the OpenAPI document. */
  async function httpsRequest(server: ApiServer, method: string, url: string, headers: Record<string, string>, body?: Buffer) {
    const ca = await readFile(certFile);
    const response = await new Promise<{ status: number; headers: Headers; raw: Buffer }>((resolve, reject) => {
      const request = https.request(url, { method, headers, ca }, (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () => {
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
          resolve({ status: incoming.statusCode ?? 0, headers: responseHeaders, raw: Buffer.concat(chunks) });
        });
      });
      request.on('error', reject);
      request.end(body);
    });
    server.client.validator.check(method, url, response, response.raw);
    return { ...response, body: JSON.parse(response.raw.toString('utf8')) };
  }

  test('TLS_CERT_FILE and TLS_KEY_FILE serve HTTPS; the URLs handed out are https', async () => {
    const secure = await startApiServer(server.runtime.db.url, {
      env: { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile, DATA_DIR: server.config.dataDir },
    });
    try {
      assert.match(secure.baseUrl, /^https:/);
      const health = await httpsRequest(secure, 'GET', `${secure.baseUrl}/healthz`, {});
      assert.equal(health.status, 200);
      // A submission over HTTPS: the multipart body as fetch would send it.
      const form = new Request('https://unused.invalid/', { method: 'POST', body: scanForm(await pagesZip(['1.jpg'])) });
      const submitted = await httpsRequest(
        secure,
        'POST',
        `${secure.baseUrl}/v1/process-scan`,
        {
          'X-API-Key': payer.key,
          'Content-Type': form.headers.get('content-type') ?? '',
        },
        Buffer.from(await form.arrayBuffer()),
      );
      assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
      assert.equal(submitted.body.status_url, `${secure.baseUrl}/v1/process-scan/${submitted.body.job_id}`);
      const status = await httpsRequest(secure, 'GET', submitted.body.status_url, { Authorization: `Bearer ${payer.key}` });
      assert.equal(status.status, 200);
      // Plain HTTP on the TLS port is not served: the connection is closed without an answer.
      await assert.rejects(
        fetch(`http://127.0.0.1:${new URL(secure.baseUrl).port}/healthz`),
        (error: Error & { cause?: { code?: string } }) =>
          error instanceof TypeError &&
          error.message === 'fetch failed' &&
          ['UND_ERR_SOCKET', 'ECONNRESET'].includes(error.cause?.code ?? ''),
      );
    } finally {
      await secure.close();
    }
  });

  test("the compose file's API healthcheck passes over HTTPS with TLS_CERT_FILE and over HTTP without (it asked HTTP only)", async () => {
    const compose = parse(await readFile(path.join(import.meta.dirname, '../../docker-compose.yml'), 'utf8'));
    const [kind, node, flag, script] = compose.services.api.healthcheck.test as string[];
    assert.deepEqual([kind, node, flag], ['CMD', 'node', '-e']);
    const check = (port: string, tls: boolean) =>
      new Promise<number | null>((resolve) => {
        const env = { PATH: process.env.PATH ?? '', ...(tls ? { TLS_CERT_FILE: certFile } : {}) };
        const child = spawn(process.execPath, ['-e', script.replace('port: 8080', `port: ${port}`)], { env, stdio: 'ignore' });
        child.on('close', resolve);
      });
    const secure = await startApiServer(server.runtime.db.url, {
      env: { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile, DATA_DIR: server.config.dataDir },
    });
    try {
      const securePort = new URL(secure.baseUrl).port;
      const plainPort = new URL(server.baseUrl).port;
      assert.deepEqual(
        [await check(securePort, true), await check(plainPort, false), await check(securePort, false), await check('1', false)],
        [0, 0, 1, 1],
      );
    } finally {
      await secure.close();
    }
  });
});
