// The client module (`hwr/client`): its types against the served OpenAPI document, and its
// retry and download rules against small local HTTP servers.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  HwrApiError,
  HwrClient,
  LLM_TIERS,
  OPTIONAL_FIELDS,
  PDF_FORMATS,
  PRESETS,
  RESPONSE_FIELDS,
  SUBMIT_FIELDS,
  JOB_STATES,
  STEPS,
  CALLBACK_STATES,
  MODEL_STATES,
  TRAIN_FIELDS,
  retryAfterMs,
} from 'hwr/client';
import { openApiDocument } from '../../src/http/openapi.ts';

const document = openApiDocument('http://localhost:8080') as any;
const schemas = document.components.schemas;
const tmp = await mkdtemp(path.join(os.tmpdir(), 'hwr-client-module-'));
after(() => rm(tmp, { recursive: true, force: true }));

describe('client types match the OpenAPI document', () => {
  const objectSchemas: Record<keyof typeof RESPONSE_FIELDS, any> = {
    Submission: schemas.Submission,
    JobStatus: schemas.JobStatus,
    CallbackStatus: schemas.JobStatus.properties.callback.oneOf[1],
    JobEvents: schemas.JobEvents,
    JobEvent: schemas.JobEvents.properties.events.items,
    Usage: schemas.Usage,
    CorrectionUsage: schemas.Usage.properties.correction.items,
    Problem: schemas.Problem,
    ModelSubmission: schemas.ModelSubmission,
    ModelStatus: schemas.ModelStatus,
    ModelLinesSkipped: schemas.ModelStatus.properties.lines_skipped,
    ModelProgress: schemas.ModelStatus.properties.progress.oneOf[1],
    ModelProgressPoint: schemas.ModelStatus.properties.progress.oneOf[1].properties.history.items,
    ModelFigures: schemas.ModelStatus.properties.figures.oneOf[1],
    ModelList: schemas.ModelList,
  };
  for (const [name, schema] of Object.entries(objectSchemas) as [keyof typeof RESPONSE_FIELDS, any][]) {
    test(`${name}: the same properties, and required exactly where the type does not say optional`, () => {
      assert.deepEqual([...RESPONSE_FIELDS[name]].sort(), Object.keys(schema.properties).sort());
      const optional: readonly string[] = (OPTIONAL_FIELDS as Record<string, readonly string[]>)[name] ?? [];
      assert.deepEqual([...schema.required].sort(), RESPONSE_FIELDS[name].filter((field) => !optional.includes(field)).sort());
    });
  }

  test('enums: tiers, presets, PDF formats, job states, steps, callback states', () => {
    const form = document.paths['/v1/process-scan'].post.requestBody.content['multipart/form-data'].schema;
    assert.deepEqual([...SUBMIT_FIELDS].sort(), Object.keys(form.properties).sort());
    assert.deepEqual(form.properties.llm_tier.enum, [...LLM_TIERS]);
    assert.deepEqual(form.properties.preset.enum, [...PRESETS]);
    assert.deepEqual(form.properties.pdf_format.enum, [...PDF_FORMATS]);
    assert.deepEqual(schemas.JobStatus.properties.state.enum, [...JOB_STATES]);
    assert.deepEqual(schemas.JobStatus.properties.current_step.enum, [...STEPS, null]);
    assert.deepEqual(schemas.JobStatus.properties.callback.oneOf[1].properties.state.enum, [...CALLBACK_STATES]);
    assert.equal(schemas.Submission.properties.state.const, 'queued');
  });

  test('models: the training form fields and the model states', () => {
    const form = document.paths['/v1/models'].post.requestBody.content['multipart/form-data'].schema;
    assert.deepEqual([...TRAIN_FIELDS].sort(), Object.keys(form.properties).sort());
    assert.deepEqual(schemas.ModelStatus.properties.state.enum, [...MODEL_STATES]);
    assert.equal(schemas.ModelSubmission.properties.state.const, 'queued');
    assert.ok(document.paths['/v1/models'].get);
    assert.ok(document.paths['/v1/models/{model_id}'].get);
    assert.ok(document.paths['/v1/models/{model_id}'].delete);
  });

  test('the operations the client calls exist with the methods it uses', () => {
    assert.ok(document.paths['/v1/process-scan'].post);
    assert.ok(document.paths['/v1/process-scan'].post.parameters.some((parameter: any) => parameter.name === 'Idempotency-Key'));
    assert.ok(document.paths['/v1/process-scan/{job_id}'].get);
    assert.ok(document.paths['/v1/process-scan/{job_id}'].delete);
    assert.ok(document.paths['/v1/process-scan/{job_id}/result'].get);
    assert.ok(document.paths['/v1/process-scan/{job_id}/events'].get);
    assert.deepEqual(
      document.paths['/v1/usage'].get.parameters.map((parameter: any) => parameter.name),
      ['from', 'to'],
    );
  });
});

type Handler = (request: IncomingMessage, response: ServerResponse, body: Buffer) => void;

async function serve(handler: Handler): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => handler(request, response, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${address.port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const usageBody = {
  account_id: '00000000-0000-4000-8000-000000000000',
  from: null,
  to: null,
  jobs: 0,
  pages: 0,
  models_trained: 0,
  lines_trained: 0,
  correction: [],
};

describe('retries', () => {
  test('Retry-After in seconds and as a date', () => {
    assert.equal(retryAfterMs('3'), 3000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6_000);
    assert.equal(retryAfterMs(null), null);
    assert.equal(retryAfterMs('soon'), null);
  });

  test('503 and 429 are retried after their Retry-After; then the answer is returned', async () => {
    const times: number[] = [];
    const server = await serve((_request, response) => {
      times.push(Date.now());
      if (times.length === 1) return response.writeHead(503, { 'Retry-After': '1' }).end();
      if (times.length === 2)
        return response
          .writeHead(429, { 'Retry-After': new Date(Date.now() + 1500).toUTCString(), 'Content-Type': 'application/problem+json' })
          .end('{}');
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(usageBody));
    });
    const retries: string[] = [];
    const client = new HwrClient({ url: server.url, apiKey: 'k', onRetry: (info) => retries.push(info.reason) });
    assert.deepEqual(await client.usage(), usageBody);
    assert.equal(times.length, 3);
    assert.ok(times[1] - times[0] >= 950, `waited ${times[1] - times[0]} ms after the 503`);
    assert.ok(times[2] - times[1] >= 400, `waited ${times[2] - times[1]} ms after the 429 (an HTTP date has 1 s resolution)`);
    assert.deepEqual(retries, ['503', '429']);
  });

  test('a 503 whose problem says not retryable (training_unavailable) is answered at once, not retried', async () => {
    let requests = 0;
    const server = await serve((_request, response) => {
      requests++;
      response.writeHead(503, { 'Content-Type': 'application/problem+json' }).end(
        JSON.stringify({
          type: 'about:blank',
          title: 'x',
          status: 503,
          detail: 'install PyTorch',
          code: 'training_unavailable',
          retryable: false,
        }),
      );
    });
    const client = new HwrClient({ url: server.url, apiKey: 'k' });
    await assert.rejects(client.trainModel(new Uint8Array([80, 75, 5, 6])), (error: unknown) => {
      assert.ok(error instanceof HwrApiError);
      assert.deepEqual([error.status, error.code, error.retryable], [503, 'training_unavailable', false]);
      return true;
    });
    assert.equal(requests, 1);
  });

  test('a submit sends an Idempotency-Key, the same one on every retry', async () => {
    const keys: (string | undefined)[] = [];
    const server = await serve((request, response, body) => {
      keys.push(request.headers['idempotency-key'] as string | undefined);
      assert.ok(body.includes(Buffer.from('name="scan_zip"; filename="pages.zip"')));
      assert.ok(body.includes(Buffer.from('name="llm_tier"')));
      if (keys.length < 3) return response.writeHead(503, { 'Retry-After': '0' }).end();
      response.writeHead(202, { 'Content-Type': 'application/json' }).end(JSON.stringify({ job_id: 'j', state: 'queued' }));
    });
    const client = new HwrClient({ url: server.url, apiKey: 'k' });
    const submission = await client.submit(new Uint8Array([80, 75, 5, 6]), { filename: 'pages.zip', llm_tier: 'cheap' });
    assert.equal(submission.job_id, 'j');
    assert.equal(keys.length, 3);
    assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
    assert.equal(new Set(keys).size, 1);
  });

  test('other errors are not retried and carry the problem', async () => {
    let calls = 0;
    const server = await serve((_request, response) => {
      calls++;
      response
        .writeHead(404, { 'Content-Type': 'application/problem+json' })
        .end(JSON.stringify({ type: 'about:blank', title: 'Not found', status: 404, detail: 'No job x.', code: 'job_not_found' }));
    });
    const client = new HwrClient({ url: server.url, apiKey: 'k' });
    await assert.rejects(
      client.status('x'),
      (error: unknown) => error instanceof HwrApiError && error.status === 404 && error.code === 'job_not_found',
    );
    assert.equal(calls, 1);
  });

  test('after the last retry the 503 is the error', async () => {
    const server = await serve((_request, response) => response.writeHead(503, { 'Retry-After': '0' }).end());
    const client = new HwrClient({ url: server.url, apiKey: 'k', retries: 2 });
    await assert.rejects(client.usage(), (error: unknown) => error instanceof HwrApiError && error.status === 503);
  });
});

describe('result download', () => {
  test('follows a redirect to another origin without the API key; checks the size; writes the file whole', async () => {
    const archive = Buffer.alloc(100_000, 7);
    const seenKeys: (string | undefined)[] = [];
    const storage = await serve((request, response) => {
      seenKeys.push(request.headers['x-api-key'] as string | undefined);
      response.writeHead(200, { 'Content-Type': 'application/zip', 'Content-Length': String(archive.length) }).end(archive);
    });
    const api = await serve((request, response) => {
      assert.equal(request.headers['x-api-key'], 'secret');
      response.writeHead(302, { Location: `${storage.url}/blob/1` }).end();
    });
    const client = new HwrClient({ url: api.url, apiKey: 'secret' });
    const file = path.join(tmp, 'r.zip');
    assert.deepEqual(await client.downloadResult('job', file), { path: file, bytes: archive.length });
    assert.deepEqual(await readFile(file), archive);
    assert.deepEqual(seenKeys, [undefined]);
  });

  test('a download cut short fails and leaves no file', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/zip', 'Content-Length': '1000' });
      response.write(Buffer.alloc(10));
      setTimeout(() => response.destroy(), 50);
    });
    const client = new HwrClient({ url: server.url, apiKey: 'k', retries: 0 });
    const file = path.join(tmp, 'short.zip');
    await assert.rejects(client.downloadResult('job', file), { name: 'TypeError', message: 'terminated' });
    await assert.rejects(readFile(file), { code: 'ENOENT' });
    await assert.rejects(readFile(`${file}.part`), { code: 'ENOENT' });
  });
});
