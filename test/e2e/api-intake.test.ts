// Every intake check through HTTP, with the real fixture ZIPs of test/fixtures/zips:
// a 400 (413 for size) problem+json with the stable code and a detail naming the file;
// unknown option values; the webhook_url address rules and their relaxations. Nothing
// a refused upload brings is left on disk.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import {
  createCredentials,
  pagesZip,
  readZipFixture,
  scanForm,
  startApiServer,
  type ApiResponse,
  type ApiServer,
  type Auth,
} from '../support/http-client.ts';
import { tempUploadDir } from '../../src/intake/temp-uploads.ts';

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl);
const servers: ApiServer[] = [server];
after(async () => {
  for (const each of servers) await each.close();
});
const auth: Auth = { key: (await createCredentials(server.runtime, 'intake')).key };

/** Another API process on the same database with other limits or webhook rules. */
async function serverWith(env: Record<string, string>): Promise<ApiServer> {
  const other = await startApiServer(databaseUrl, { env });
  servers.push(other);
  return other;
}

function assertProblem(response: ApiResponse, status: number, code: string, detail: RegExp): void {
  assert.equal(response.status, status, `${code}: ${JSON.stringify(response.body)}`);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.body.code, code);
  assert.equal(response.body.status, status);
  assert.equal(response.body.type, `urn:hwr:problem:${code}`);
  assert.match(response.body.detail, detail);
  assert.match(response.body.instance, /^urn:hwr:request:/);
}

async function submitFixture(fixture: string, on: ApiServer = server, fields: Record<string, string> = {}): Promise<ApiResponse> {
  return on.client.submit(await readZipFixture(fixture), auth, fields, {}, fixture);
}

/** Each fixture of test/fixtures/zips/README.md that intake refuses, with its code and the file its detail names. */
const REFUSED: Array<[fixture: string, code: string, detail: RegExp]> = [
  ['not-a-zip.zip', 'invalid_zip', /"not-a-zip\.zip" is not a ZIP archive/],
  ['truncated.zip', 'invalid_zip', /"truncated\.zip" is not a ZIP archive/],
  ['crc-mismatch.zip', 'invalid_zip', /entry "1\.jpg" is damaged/],
  ['encrypted.zip', 'encrypted_zip', /entry "1\.jpg" is encrypted/],
  ['junk-only.zip', 'no_images', /"junk-only\.zip" contains no images/],
  ['empty.zip', 'no_images', /"empty\.zip" contains no images/],
  ['not-an-image.zip', 'not_an_image', /entry "notes\.txt" is not an image/],
  ['empty-entry.zip', 'not_an_image', /entry "1\.jpg" is empty/],
  ['truncated-image.zip', 'unreadable_image', /entry "2\.jpg" .*header cannot be read/],
  ['gif.zip', 'unsupported_image_format', /entry "2\.gif" is a GIF file/],
  ['multi-page-tiff.zip', 'multi_page_image', /entry "scan\.tif" holds 2 pages/],
  ['traversal-dotdot.zip', 'unsafe_path', /entry "scans\/\.\.\/\.\.\/evil\.jpg" climbs out/],
  ['traversal-absolute.zip', 'unsafe_path', /entry "\/tmp\/evil\.jpg" is an absolute path/],
  ['traversal-backslash.zip', 'unsafe_path', /entry "\.\.\\\.\.\\evil\.jpg" climbs out/],
  ['traversal-drive.zip', 'unsafe_path', /entry "C:\\Windows\\evil\.jpg" is an absolute path/],
  ['symlink.zip', 'unsafe_path', /entry "link\.jpg" is a symbolic link/],
  ['bomb-ratio.zip', 'zip_bomb', /entry "blank\.tif" declares 16777216 bytes/],
  ['bomb-lying-size.zip', 'zip_bomb', /entry "page\.jpg" inflates to more bytes than its header declares/],
  ['bzip2.zip', 'unsupported_compression', /entry "1\.jpg" uses compression method 12/],
  ['duplicate.zip', 'duplicate_entry', /entry "1\.jpg" appears more than once/],
];

describe('intake checks through HTTP', () => {
  for (const [fixture, code, detail] of REFUSED) {
    test(`${fixture}: 400 ${code}`, async () => {
      assertProblem(await submitFixture(fixture), 400, code, detail);
    });
  }

  test('a password-protected ZIP is 400 with Bearer auth too (the spec’s own example)', async () => {
    const response = await server.client.submit(
      await readZipFixture('encrypted.zip'),
      { key: auth!.key, scheme: 'bearer' },
      {},
      {},
      'secret.zip',
    );
    assertProblem(response, 400, 'encrypted_zip', /encrypted/);
  });

  test('accepted archives: OS junk ignored, content over name, natural page order, streamed and Zip64', async () => {
    const cases: Array<[string, string[]]> = [
      ['valid-mixed.zip', ['scans/1.jpg', 'scans/2.png', 'scans/3.webp', 'scans/10.tif']],
      ['natural-order.zip', ['part 1/a.jpg', 'part 1/b.jpg', 'part 2/9.jpg', 'part 2/10.jpg', 'part 10/1.jpg']],
      ['content-not-name.zip', ['page1.jpg', 'page2.png']],
      ['streamed.zip', ['1.jpg', '2.jpg']],
      ['valid-zip64.zip', ['1.jpg', '2.jpg']],
    ];
    for (const [fixture, names] of cases) {
      const response = await submitFixture(fixture);
      assert.equal(response.status, 202, `${fixture}: ${JSON.stringify(response.body)}`);
      assert.equal(response.body.page_count, names.length, fixture);
      const events: Array<{ data: { pages: Array<{ name: string }> } }> = (
        await server.client.get(`/v1/process-scan/${response.body.job_id}/events`, auth)
      ).body.events;
      assert.deepEqual(
        events[0].data.pages.map((page) => page.name),
        names,
        fixture,
      );
    }
  });

  test('limits from the configuration: MAX_PAGES, MAX_IMAGE_PIXELS, MAX_UNCOMPRESSED_BYTES', async () => {
    const limited = await serverWith({ MAX_PAGES: '4', MAX_IMAGE_PIXELS: '10000' });
    assertProblem(
      await submitFixture('natural-order.zip', limited),
      400,
      'too_many_pages',
      /"natural-order\.zip" has 5 files; at most 4 pages/,
    );
    assertProblem(await submitFixture('valid-mixed.zip', limited), 400, 'image_too_large', /entry "scans\/1\.jpg" is 320×44 pixels/);
    const small = await serverWith({ MAX_UNCOMPRESSED_BYTES: '5000' });
    assertProblem(await submitFixture('natural-order.zip', small), 400, 'zip_bomb', /declares more than 5000 bytes uncompressed in total/);
  });

  test('an upload over MAX_UPLOAD_BYTES is 413, while streaming and from Content-Length alone', async () => {
    const tiny = await serverWith({ MAX_UPLOAD_BYTES: '5000' });
    // 21 KB: the multipart parser stops at the limit.
    assertProblem(await submitFixture('valid-mixed.zip', tiny), 413, 'upload_too_large', /larger than the 5000-byte limit for an upload$/);
    // Far over the limit: refused from Content-Length before the body is read.
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    assertProblem(await tiny.client.submit(big, auth, {}, {}, 'big.zip'), 413, 'upload_too_large', /5000-byte limit/);
    // The service is fine afterwards.
    assert.equal((await tiny.client.submit(await pagesZip(['1.jpg']), auth)).status, 202);
  });

  test('a refused upload leaves no temporary file and no stored page behind', async () => {
    const clean = await serverWith({ MAX_UPLOAD_BYTES: '5000' });
    for (const [fixture] of REFUSED.filter(
      ([name]) => name !== 'bomb-ratio.zip' && name !== 'bomb-lying-size.zip' && name !== 'gif.zip' && name !== 'multi-page-tiff.zip',
    )) {
      await submitFixture(fixture, clean);
    }
    await submitFixture('valid-mixed.zip', clean); // 413 while streaming
    assert.deepEqual(await listDir(tempUploadDir(clean.config.dataDir)), []);
    assert.deepEqual(await listDir(path.join(clean.config.dataDir, 'blobs', 'jobs')), []);
  });
});

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

describe('the multipart body', () => {
  test('no scan_zip: 400 missing_scan_zip; scan_zip as a text field: the same', async () => {
    assertProblem(await server.client.submit(null, auth, { llm_tier: 'cheap' }), 400, 'missing_scan_zip', /scan_zip/);
    assertProblem(await server.client.submit(null, auth, { scan_zip: 'not a file' }), 400, 'missing_scan_zip', /scan_zip/);
  });

  test('a body that is not multipart/form-data: 415', async () => {
    const response = await server.client.request('POST', '/v1/process-scan', {
      auth,
      headers: { 'Content-Type': 'application/zip' },
      body: new Blob([new Uint8Array(await pagesZip(['1.jpg']))]),
    });
    assertProblem(response, 415, 'unsupported_media_type', /multipart\/form-data/);
  });
});

describe('option values', () => {
  const cases: Array<[Record<string, string>, string, RegExp]> = [
    [{ llm_tier: 'premium' }, 'invalid_llm_tier', /llm_tier must be one of cheap, balanced, best; got "premium"/],
    [{ preset: 'novel' }, 'invalid_preset', /preset must be one of .*generic.*; got "novel"/],
    [{ pdf_format: 'pdfa-1b' }, 'invalid_pdf_format', /pdf_format must be one of pdfa-2b, pdf, none; got "pdfa-1b"/],
    [{ pipeline_steps: 'ocr' }, 'invalid_pipeline_steps', /unknown step "ocr"/],
    [{ pipeline_steps: 'recognition,export' }, 'invalid_pipeline_steps', /each step needs the ones before it/],
    [{ pipeline_steps: 'layout,correction' }, 'invalid_pipeline_steps', /skips recognition/],
    [{ pipeline_steps: 'export' }, 'invalid_pipeline_steps', /must include layout/],
  ];
  for (const [fields, code, detail] of cases) {
    test(`${JSON.stringify(fields)}: 400 ${code}`, async () => {
      assertProblem(await server.client.submit(await pagesZip(['1.jpg']), auth, fields), 400, code, detail);
    });
  }

  test('an option given twice: 400 invalid_multipart, not the first value silently', async () => {
    const form = scanForm(await pagesZip(['1.jpg']), { llm_tier: 'cheap' });
    form.append('llm_tier', 'best');
    const response = await server.client.request('POST', '/v1/process-scan', { auth, body: form });
    assertProblem(response, 400, 'invalid_multipart', /the field llm_tier is given 2 times; give it once/);
  });
});

describe('webhook_url rules', () => {
  test('by default only https URLs of public addresses', async () => {
    const strict = await serverWith({ WEBHOOK_ALLOW_HTTP: '0', WEBHOOK_ALLOW_PRIVATE: '0' });
    const refused: Array<[string, RegExp]> = [
      ['http://93.184.215.14/hook', /must be an https URL/],
      ['https://127.0.0.1/hook', /127\.0\.0\.1 is .*loopback/i],
      ['https://localhost/hook', /localhost resolves to .*loopback/i],
      ['https://10.1.2.3/hook', /private/i],
      ['https://192.168.1.1/hook', /private/i],
      ['https://169.254.169.254/latest/meta-data', /link-local/i],
      ['https://[::1]/hook', /loopback/i],
      ['https://user:pass@93.184.215.14/hook', /user name or password/],
      ['ftp://93.184.215.14/hook', /https URL/],
      ['not a url', /not a valid absolute URL/],
    ];
    for (const [url, detail] of refused) {
      const response = await strict.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: url });
      assertProblem(response, 400, 'invalid_webhook_url', detail);
    }
    const accepted = await strict.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'https://93.184.215.14/hook' });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const status = await strict.client.get(accepted.body.status_url, auth);
    assert.deepEqual(status.body.callback, { state: 'waiting', attempts: 0, last_status: null, next_attempt_at: null });
  });

  test('WEBHOOK_ALLOW_HTTP=1 accepts http, still only public addresses', async () => {
    const httpOnly = await serverWith({ WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE: '0' });
    assert.equal((await httpOnly.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'http://93.184.215.14/hook' })).status, 202);
    assertProblem(
      await httpOnly.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'http://127.0.0.1:9/hook' }),
      400,
      'invalid_webhook_url',
      /loopback/i,
    );
  });

  test('WEBHOOK_ALLOW_PRIVATE=1 accepts private and loopback addresses, still only https', async () => {
    const privateOnly = await serverWith({ WEBHOOK_ALLOW_HTTP: '0', WEBHOOK_ALLOW_PRIVATE: '1' });
    assert.equal(
      (await privateOnly.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'https://127.0.0.1:9/hook' })).status,
      202,
    );
    assert.equal((await privateOnly.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'https://10.1.2.3/hook' })).status, 202);
    assertProblem(
      await privateOnly.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: 'http://127.0.0.1:9/hook' }),
      400,
      'invalid_webhook_url',
      /https/,
    );
  });

  test('an empty webhook_url means no callback', async () => {
    const response = await server.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: '' });
    assert.equal(response.status, 202);
    assert.equal((await server.client.get(response.body.status_url, auth)).body.callback, null);
  });
});
