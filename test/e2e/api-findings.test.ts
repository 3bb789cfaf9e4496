// Issue 42's findings on the API, against a real server whose log is read back (a real pino logger
// writing JSON lines to a stream the test keeps): a too-small page image refused at upload, unknown
// form fields refused, upload names with bidirectional controls escaped in messages, and
// customer-facing messages that name no server setting while the operator's log does.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startRuntime } from '../../src/runtime/runtime.ts';
import { startHttpServer } from '../../src/server/http-server.ts';
import { createTestDatabase } from '../support/database.ts';
import { testConfig } from '../support/engine.ts';
import { API_TEST_ENV, ApiClient, type ApiResponse, createCredentials, makeZip, pagesZip } from '../support/http-client.ts';
import { portalUser } from '../support/portal-client.ts';

const databaseUrl = await createTestDatabase();

/** A server with its own settings whose log lines (JSON) the test reads. */
async function serverWithLog(env: Record<string, string>) {
  const lines: Array<Record<string, any>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const config = await testConfig(databaseUrl, { ...API_TEST_ENV, PORT: String(port), HOST: '127.0.0.1', BASE_URL: baseUrl, ...env });
  const runtime = await startRuntime(config, createLogger('info', { destination }), { workers: false });
  const http = await startHttpServer(runtime, port, '127.0.0.1');
  after(async () => {
    await http.close();
    await runtime.stop();
  });
  const credentials = await createCredentials(runtime);
  return { runtime, baseUrl, client: new ApiClient(baseUrl), auth: { key: credentials.key }, credentials, lines, port };
}

// Strict about webhooks (the defaults of a deployment), and small limits that a test reaches.
const strict = await serverWithLog({
  WEBHOOK_ALLOW_HTTP: '0',
  WEBHOOK_ALLOW_PRIVATE: '0',
  MAX_PAGES: '3',
  MAX_IMAGE_PIXELS: '20000',
  MIN_BODY_BYTES_PER_SECOND: '1024',
  BODY_RATE_WINDOW_SECONDS: '2',
});

const SETTING_NAME = /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/;

function assertProblem(response: ApiResponse, status: number, code: string, detail?: RegExp): void {
  assert.equal(response.status, status, `${code}: ${JSON.stringify(response.body)}`);
  assert.equal(response.body.code, code, JSON.stringify(response.body));
  if (detail) assert.match(response.body.detail, detail);
}

const image = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#ffffff' } })
    .png()
    .toBuffer();

describe('a page image too small to be a page', () => {
  test('a 1×1 image is refused at upload with 400 image_too_small, naming the entry and the minimum', async () => {
    const response = await strict.client.submit(await makeZip([{ name: 'pixel.png', data: await image(1, 1) }]), strict.auth);
    assertProblem(response, 400, 'image_too_small', /entry "pixel\.png" is 1×1 pixels; a page image needs at least 16 pixels a side/);
    assert.equal(response.body.retryable, false);
  });

  test('the minimum is 16 pixels a side: 15 on one side is refused, 16×16 is accepted', async () => {
    const narrow = await strict.client.submit(
      await makeZip([
        { name: '1.png', data: await image(16, 16) },
        { name: '2.png', data: await image(15, 400) },
      ]),
      strict.auth,
    );
    assertProblem(narrow, 400, 'image_too_small', /entry "2\.png" is 15×400 pixels/);
    const smallest = await strict.client.submit(await makeZip([{ name: '1.png', data: await image(16, 16) }]), strict.auth);
    assert.equal(smallest.status, 202, JSON.stringify(smallest.body));
  });
});

describe('unknown form fields', () => {
  test('a typo of an option (pipline_steps) is refused with 400 unknown_field naming it; nothing is queued', async () => {
    const before = await strict.runtime.db.pool.query('select count(*)::int as n from job_status where account_id = $1', [
      strict.credentials.accountId,
    ]);
    const response = await strict.client.submit(await pagesZip(['1.jpg']), strict.auth, { pipline_steps: 'layout' });
    assertProblem(response, 400, 'unknown_field', /pipline_steps/);
    const twoUnknown = await strict.client.submit(await pagesZip(['1.jpg']), strict.auth, { tier: 'best', colour: 'yes' });
    assertProblem(twoUnknown, 400, 'unknown_field', /tier.*colour|colour.*tier/);
    const after = await strict.runtime.db.pool.query('select count(*)::int as n from job_status where account_id = $1', [
      strict.credentials.accountId,
    ]);
    assert.equal(after.rows[0].n, before.rows[0].n);
    // The refusal lists the fields the OpenAPI document names, and those are accepted.
    const document = (await strict.client.get('/v1/openapi.json', null)).body;
    const properties = Object.keys(document.paths['/v1/process-scan'].post.requestBody.content['multipart/form-data'].schema.properties);
    for (const name of properties) assert.ok(response.body.detail.includes(name), `${name} in ${response.body.detail}`);
    // Every known field, given, is accepted.
    const known = await strict.client.submit(await pagesZip(['1.jpg']), strict.auth, {
      llm_tier: 'cheap',
      preset: 'letter',
      pdf_format: 'none',
      pipeline_steps: 'layout,recognition',
      webhook_url: '',
    });
    assert.equal(known.status, 202, JSON.stringify(known.body));
  });

  test('the portal upload, through the same handler, refuses it the same way', async () => {
    const user = await portalUser(strict.runtime, strict.baseUrl, strict.credentials.accountName, 'typo@example.org');
    const page = await user.get('/portal/jobs/new');
    const token = /action="\/portal\/jobs\/new\?_csrf=([^"]+)"/.exec(page.text)![1];
    const form = new FormData();
    form.append('pipline_steps', 'layout');
    form.append('scan_zip', new Blob([new Uint8Array(await pagesZip(['1.jpg']))], { type: 'application/zip' }), 'scan.zip');
    const response = await fetch(`${strict.baseUrl}/portal/jobs/new?_csrf=${encodeURIComponent(token)}`, {
      method: 'POST',
      body: form,
      redirect: 'manual',
      headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
    });
    assert.equal(response.status, 303);
    const shown = await user.get(response.headers.get('location')!);
    assert.equal(shown.status, 400);
    assert.match(shown.text, /pipline_steps/);
  });
});

describe('upload names with bidirectional control characters', () => {
  test('a refusal quoting an entry name escapes U+202E and its kin instead of sending them raw', async () => {
    const response = await strict.client.submit(
      await makeZip([{ name: 'notes\u202Egpj.txt', data: Buffer.from('not an image') }]),
      strict.auth,
    );
    assertProblem(response, 400, 'not_an_image');
    assert.ok(!/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(response.body.detail), response.body.detail);
    assert.match(response.body.detail, /entry "notes\\u202egpj\.txt" is not an image/);
  });
});

describe('messages in customer words, settings in the operator log', () => {
  const refusals = (code: string) => strict.lines.filter((line) => line.code === code && typeof line.setting === 'string');

  test('a webhook address refused by the address rules names no setting; the log names WEBHOOK_ALLOW_PRIVATE and WEBHOOK_ALLOW_HTTP', async () => {
    const zip = await pagesZip(['1.jpg']);
    const privateHost = await strict.client.submit(zip, strict.auth, { webhook_url: 'https://10.1.2.3/hook' });
    assertProblem(privateHost, 400, 'invalid_webhook_url', /host 10\.1\.2\.3 is .*only public addresses are accepted/);
    assert.doesNotMatch(privateHost.body.detail, SETTING_NAME);
    const plainHttp = await strict.client.submit(zip, strict.auth, { webhook_url: 'http://93.184.215.14/hook' });
    assertProblem(plainHttp, 400, 'invalid_webhook_url', /must be an https URL/);
    assert.doesNotMatch(plainHttp.body.detail, SETTING_NAME);
    const logged = refusals('invalid_webhook_url').map((line) => line.setting);
    assert.ok(logged.includes('WEBHOOK_ALLOW_PRIVATE'), JSON.stringify(refusals('invalid_webhook_url')));
    assert.ok(logged.includes('WEBHOOK_ALLOW_HTTP'), JSON.stringify(refusals('invalid_webhook_url')));
  });

  test('intake limits (MAX_PAGES, MAX_IMAGE_PIXELS) say the limit, not the setting; the log names the setting with the request id', async () => {
    const tooMany = await strict.client.submit(await pagesZip(['1.jpg', '2.jpg', '3.jpg', '4.jpg']), strict.auth);
    assertProblem(tooMany, 400, 'too_many_pages', /has 4 files; at most 3 pages are accepted/);
    assert.doesNotMatch(tooMany.body.detail, SETTING_NAME);
    const tooLarge = await strict.client.submit(await makeZip([{ name: 'big.png', data: await image(200, 200) }]), strict.auth);
    assertProblem(tooLarge, 400, 'image_too_large', /is 200×200 pixels, more than 20000/);
    assert.doesNotMatch(tooLarge.body.detail, SETTING_NAME);
    const pages = refusals('too_many_pages');
    assert.equal(pages.at(-1)?.setting, 'MAX_PAGES', JSON.stringify(pages));
    assert.equal(`urn:hwr:request:${pages.at(-1)?.request_id}`, tooMany.body.instance);
    assert.equal(refusals('image_too_large').at(-1)?.setting, 'MAX_IMAGE_PIXELS');
  });

  test('an upload too slow is cut with a 408 that names no setting; the log names MIN_BODY_BYTES_PER_SECOND', async () => {
    const received = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(strict.port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('error', reject);
      const trickle = setInterval(() => socket.writable && socket.write('x'.repeat(50)), 1000);
      socket.on('close', () => {
        clearInterval(trickle);
        resolve(text);
      });
      socket.write(
        [
          'POST /v1/process-scan HTTP/1.1',
          'Host: 127.0.0.1',
          `X-API-Key: ${strict.auth.key}`,
          'Content-Type: multipart/form-data; boundary=b0undary',
          'Content-Length: 10000000',
          '',
          '--b0undary\r\nContent-Disposition: form-data; name="scan_zip"; filename="a.zip"\r\n\r\n',
        ].join('\r\n'),
      );
    });
    assert.match(received, /^HTTP\/1\.1 408 /);
    const detail = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)).detail as string;
    assert.match(detail, /slower than 1024 bytes\/s over 2 s/);
    assert.doesNotMatch(detail, SETTING_NAME);
    assert.equal(refusals('request_body_too_slow').at(-1)?.setting, 'MIN_BODY_BYTES_PER_SECOND');
  });

  test('an upload over the size limit says so in bytes, not by the setting; the log names MAX_UPLOAD_BYTES', async () => {
    const tiny = await serverWithLog({ MAX_UPLOAD_BYTES: '5000' });
    const noise = await sharp(randomBytes(120 * 120 * 3), {
      raw: { width: 120, height: 120, channels: 3 },
    })
      .png()
      .toBuffer();
    const response = await tiny.client.submit(await makeZip([{ name: 'noise.png', data: noise }]), tiny.auth, {}, {}, 'big.zip');
    assertProblem(response, 413, 'upload_too_large', /larger than the 5000-byte limit/);
    assert.doesNotMatch(response.body.detail, SETTING_NAME);
    assert.equal(tiny.lines.filter((line) => line.code === 'upload_too_large').at(-1)?.setting, 'MAX_UPLOAD_BYTES');
  });
});
