// POST /v1/process-scan over real HTTP: the 202 body of spec 4.1, the defaults and
// every accepted option value (docs/contract.md), the stored upload and pages, and a
// graceful shutdown that finishes an upload in flight.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { after, describe, test } from 'node:test';
import { PRESETS } from '../../src/recognition/correction/presets.ts';
import { LLM_TIERS, PDF_FORMATS } from '../../src/pipeline/pipeline.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, readZipFixture, scanForm, startApiServer, type Auth } from '../support/http-client.ts';
import { tempUploadDir } from '../../src/intake/temp-uploads.ts';

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl);
after(() => server.close());
const { client, runtime } = server;
const auth: Auth = { key: (await createCredentials(runtime, 'submitter')).key };

async function queuedEvent(jobId: string) {
  const events = (await client.get(`/v1/process-scan/${jobId}/events`, auth)).body.events;
  assert.equal(events[0].type, 'JobQueued');
  return events[0].data;
}

describe('the 202 body', () => {
  test('job_id, state queued, page_count, created_at, expires_at = created_at + 7 days, status_url, result_url', async () => {
    const before = Date.now();
    const response = await client.submit(await readZipFixture('valid-mixed.zip'), auth);
    const after = Date.now();
    assert.equal(response.status, 202);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    const job = response.body;
    assert.deepEqual(Object.keys(job).sort(), ['created_at', 'expires_at', 'job_id', 'page_count', 'result_url', 'state', 'status_url']);
    assert.equal(job.state, 'queued');
    assert.equal(job.page_count, 4);
    assert.match(job.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'ISO 8601 UTC');
    const created = Date.parse(job.created_at);
    assert.ok(created >= before - 5 && created <= after + 5);
    assert.equal(Date.parse(job.expires_at) - created, 7 * 24 * 3600 * 1000);
    assert.equal(job.status_url, `${server.baseUrl}/v1/process-scan/${job.job_id}`);
    assert.equal(job.result_url, `${server.baseUrl}/v1/process-scan/${job.job_id}/result`);
  });

  test('the defaults: llm_tier balanced, preset generic, pipeline_steps all, pdf_format pdfa-2b, no webhook', async () => {
    const { body: job } = await client.submit(await pagesZip(['1.jpg']), auth);
    assert.deepEqual((await queuedEvent(job.job_id)).options, {
      llmTier: 'balanced',
      preset: 'generic',
      pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
      pdfFormat: 'pdfa-2b',
      webhookUrl: null,
    });
  });

  test('the upload and each page are stored, byte for byte', async () => {
    const zip = await pagesZip(['b/2.jpg', 'b/10.jpg', 'a.jpg']);
    const { body: job } = await client.submit(zip, auth);
    const queued = await queuedEvent(job.job_id);
    assert.deepEqual(
      queued.pages.map((page: { name: string }) => page.name),
      ['a.jpg', 'b/2.jpg', 'b/10.jpg'],
    );
    assert.ok((await runtime.blobs.get(queued.uploadKey)).equals(zip));
    for (const page of queued.pages) {
      const stored = await runtime.blobs.get(page.blobKey);
      assert.equal(createHash('sha256').update(stored).digest('hex'), page.sha256);
      assert.equal(stored.length, page.bytes);
    }
  });
});

describe('accepted option values', () => {
  test('every llm_tier, preset and pdf_format', async () => {
    const zip = await pagesZip(['1.jpg']);
    for (const [field, values, key] of [
      ['llm_tier', LLM_TIERS, 'llmTier'],
      ['preset', PRESETS, 'preset'],
      ['pdf_format', PDF_FORMATS, 'pdfFormat'],
    ] as const) {
      for (const value of values) {
        const response = await client.submit(zip, auth, { [field]: value });
        assert.equal(response.status, 202, `${field}=${value}: ${JSON.stringify(response.body)}`);
        assert.equal((await queuedEvent(response.body.job_id)).options[key], value);
      }
    }
  });

  test('pipeline_steps: all, or a prefix of layout,recognition,correction,export; export always runs', async () => {
    const zip = await pagesZip(['1.jpg']);
    const cases: Array<[string, string[]]> = [
      ['all', ['layout', 'recognition', 'correction', 'export']],
      ['ALL', ['layout', 'recognition', 'correction', 'export']],
      ['layout', ['layout', 'export']],
      ['layout,recognition', ['layout', 'recognition', 'export']],
      [' layout , recognition , correction ', ['layout', 'recognition', 'correction', 'export']],
      ['layout,recognition,correction,export', ['layout', 'recognition', 'correction', 'export']],
      ['recognition,layout', ['layout', 'recognition', 'export']],
    ];
    for (const [value, steps] of cases) {
      const response = await client.submit(zip, auth, { pipeline_steps: value });
      assert.equal(response.status, 202, `${value}: ${JSON.stringify(response.body)}`);
      assert.deepEqual((await queuedEvent(response.body.job_id)).options.pipelineSteps, steps, value);
    }
  });

  test('a webhook_url is kept (normalised) and the status shows its delivery state', async () => {
    const response = await client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'http://127.0.0.1:9/Hook?x=1' });
    assert.equal(response.status, 202);
    assert.equal((await queuedEvent(response.body.job_id)).options.webhookUrl, 'http://127.0.0.1:9/Hook?x=1');
    const status = await client.get(response.body.status_url, auth);
    assert.equal(status.body.callback.state, 'waiting');
  });
});

describe('concurrency and shutdown', () => {
  test('parallel submissions each get their own job', async () => {
    const zip = await pagesZip(['1.jpg', '2.jpg']);
    const responses = await Promise.all(Array.from({ length: 6 }, () => client.submit(zip, auth)));
    assert.deepEqual(
      responses.map((response) => response.status),
      Array(6).fill(202),
    );
    assert.equal(new Set(responses.map((response) => response.body.job_id)).size, 6);
  });

  test('a client that gives up mid-upload leaves nothing behind, and the service carries on', async () => {
    const boundary = '----hwr-abort-boundary';
    const controller = new AbortController();
    let push!: (chunk: Buffer) => void;
    const body = new ReadableStream<Uint8Array>({
      start(stream) {
        push = (chunk) => stream.enqueue(new Uint8Array(chunk));
      },
    });
    const pending = fetch(`${server.baseUrl}/v1/process-scan`, {
      method: 'POST',
      headers: { 'X-API-Key': auth!.key, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
      signal: controller.signal,
    } as RequestInit);
    pending.catch(() => {});
    push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="scan_zip"; filename="partial.zip"\r\nContent-Type: application/zip\r\n\r\n`,
      ),
    );
    push((await pagesZip(['1.jpg', '2.jpg'])).subarray(0, 1500));
    const uploads = tempUploadDir(server.config.dataDir);
    await until(async () => (await readdir(uploads).catch(() => [])).length > 0, 'the upload started');
    controller.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    await until(async () => (await readdir(uploads)).length === 0, 'the partial upload is removed');
    const jobsBefore = await runtime.db.pool.query('select count(*)::int as n from job_status');
    assert.equal((await client.get('/healthz', null)).status, 200);
    assert.equal((await client.submit(await pagesZip(['1.jpg']), auth)).status, 202);
    const jobsAfter = await runtime.db.pool.query('select count(*)::int as n from job_status');
    assert.equal(jobsAfter.rows[0].n, jobsBefore.rows[0].n + 1, 'the aborted upload made no job');
  });

  test('a second file in the form is refused: 400 invalid_multipart', async () => {
    const form = scanForm(await pagesZip(['1.jpg']));
    form.append('extra', new Blob([new Uint8Array(await pagesZip(['2.jpg']))]), 'extra.zip');
    const response = await client.request('POST', '/v1/process-scan', { auth, body: form });
    assert.equal(response.status, 400);
    assert.equal(response.body.code, 'invalid_multipart');
    assert.match(response.body.detail, /exactly one file/);
    assert.deepEqual(await readdir(tempUploadDir(server.config.dataDir)), []);
  });

  test('too many form fields: 400 invalid_multipart', async () => {
    const fields = Object.fromEntries(Array.from({ length: 25 }, (_, index) => [`field_${index}`, 'x']));
    const response = await client.submit(await pagesZip(['1.jpg']), auth, fields);
    assert.equal(response.status, 400);
    assert.equal(response.body.code, 'invalid_multipart');
    assert.match(response.body.detail, /At most 20 form fields/);
  });

  test('a graceful shutdown finishes an upload in flight, then refuses new connections', async () => {
    const closing = await startApiServer(databaseUrl);
    const zip = await pagesZip(['1.jpg', '2.jpg', '3.jpg']);
    const boundary = '----hwr-test-boundary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="scan_zip"; filename="slow.zip"\r\nContent-Type: application/zip\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    let push!: (chunk: Buffer | null) => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (chunk) => (chunk ? controller.enqueue(new Uint8Array(chunk)) : controller.close());
      },
    });
    const url = `${closing.baseUrl}/v1/process-scan`;
    const pending = fetch(url, {
      method: 'POST',
      headers: { 'X-API-Key': auth!.key, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
    } as RequestInit);
    push(head);
    push(zip.subarray(0, 1000));
    // The upload has reached the parser when its per-request directory exists.
    const uploads = tempUploadDir(closing.config.dataDir);
    for (const deadline = Date.now() + 20_000; (await readdir(uploads).catch(() => [])).length === 0; ) {
      assert.ok(Date.now() < deadline, 'the upload started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    let closed = false;
    const shutdown = closing.close().then(() => {
      closed = true;
    });
    // The shutdown is under way once the listener is closed (a new connection is refused); it
    // has not ended, and the upload is still open: the server waits for it.
    await until(async () => (await refused(`${closing.baseUrl}/healthz`)) !== null, 'the listener closed');
    assert.equal(closed, false, 'the shutdown waits for the upload');
    push(zip.subarray(1000));
    push(tail);
    push(null);
    const response = await pending;
    const raw = Buffer.from(await response.arrayBuffer());
    closing.client.validator.check('POST', url, response, raw);
    assert.equal(response.status, 202, raw.toString());
    assert.equal(JSON.parse(raw.toString()).page_count, 3);
    assert.equal(response.headers.get('connection'), 'close', 'the client is told not to reuse the connection');
    await shutdown;
    assert.equal(await refused(`${closing.baseUrl}/healthz`), 'ECONNREFUSED', 'no new connections after shutdown');
  });
});

/** The code of the error a request to `url` is refused with (fetch's TypeError, its cause the socket's), or null when it is answered. */
async function refused(url: string): Promise<string | null> {
  try {
    await (await fetch(url)).arrayBuffer();
    return null;
  } catch (error) {
    assert.ok(error instanceof TypeError, String(error));
    return (error.cause as NodeJS.ErrnoException | undefined)?.code ?? error.message;
  }
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
