// The page viewer over real HTTP: thumbnails on the job page, the page with its polygons over
// the scaled image, the text line by line with markup escaped, low-confidence words marked,
// corrected lines with their recognised reading; images scaled and cacheable; another
// account's page not found.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, makeZip, pagesZip, startApiServer, waitForState } from '../support/http-client.ts';
import { portalUser, type PortalClient } from '../support/portal-client.ts';
import { testExportPipeline } from '../support/test-pipelines.ts';
import { viewerPagePipeline } from '../support/viewer-pipeline.ts';

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl, { pipelines: { page: viewerPagePipeline(), export: testExportPipeline() } });
after(() => server.close());
const { runtime, baseUrl, client } = server;
const acme = await createCredentials(runtime, 'acme');
await createCredentials(runtime, 'rival');

describe('portal page viewer', () => {
  let user: PortalClient;
  let jobId = '';

  test('the job page shows each page as a thumbnail linking to the viewer', async () => {
    user = await portalUser(runtime, baseUrl, 'acme', 'viewer@example.org');
    const submitted = await client.submit(await pagesZip(['1.jpg', '2.jpg']), { key: acme.key });
    jobId = submitted.body.job_id;
    await waitForState(client, { key: acme.key }, jobId, ['done']);
    const jobPage = await user.get(`/portal/jobs/${jobId}`);
    for (const n of [1, 2]) {
      assert.ok(jobPage.text.includes(`href="/portal/jobs/${jobId}/pages/${n}"`));
      assert.ok(jobPage.text.includes(`src="/portal/jobs/${jobId}/pages/${n}/image?w=160"`));
    }
  });

  test('the viewer draws every region and line polygon over the image and lists the text, escaped, with marks', async () => {
    const page = await user.get(`/portal/jobs/${jobId}/pages/2`);
    assert.equal(page.status, 200);
    assert.match(page.text, new RegExp(`<image href="/portal/jobs/${jobId}/pages/2/image\\?w=1200"`));
    assert.equal((page.text.match(/<polygon class="region"/g) ?? []).length, 2);
    assert.equal((page.text.match(/<polygon class="line"/g) ?? []).length, 3);
    for (const id of ['r1l1', 'r1l2', 'r2l1']) {
      assert.ok(page.text.includes(`id="line-${id}"`) && page.text.includes(`href="#line-${id}"`), id);
      assert.ok(page.text.includes(`id="text-${id}"`) && page.text.includes(`href="#text-${id}"`), id);
    }
    // Recognised text with markup is text.
    assert.ok(!page.text.includes('<script>alert'));
    assert.ok(!page.text.includes('<b>bold'));
    assert.ok(page.text.includes('&#60;script&#62;alert(&#34;line&#34;)&#60;/script&#62;'));
    // A corrected line shows the recognised reading; a low-confidence word is marked.
    assert.match(page.text, /Dear Sir,<\/a><span class="was">recognised: Dcar Sir,<\/span>/);
    assert.match(page.text, /<mark class="low" title="confidence 0.20">smudge<\/mark>/);
    assert.match(page.text, /href="\/portal\/jobs\/[0-9a-f-]+\/pages\/1">Previous page/);
  });

  test('images are scaled by sharp to the asked width, cacheable, and answer 304 to their ETag', async () => {
    const cookie = `hwr_session=${user.cookies.get('hwr_session')}`;
    for (const width of [160, 1200]) {
      const response = await fetch(`${baseUrl}/portal/jobs/${jobId}/pages/1/image?w=${width}`, { headers: { Cookie: cookie } });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'image/jpeg');
      assert.match(response.headers.get('cache-control') ?? '', /^private, max-age=\d+$/);
      const meta = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
      assert.ok(meta.width! <= width, `${meta.width} <= ${width}`);
      const again = await fetch(`${baseUrl}/portal/jobs/${jobId}/pages/1/image?w=${width}`, {
        headers: { Cookie: cookie, 'If-None-Match': response.headers.get('etag')! },
      });
      assert.equal(again.status, 304);
    }
    assert.equal((await fetch(`${baseUrl}/portal/jobs/${jobId}/pages/1/image?w=999`, { headers: { Cookie: cookie } })).status, 400);
    assert.equal((await fetch(`${baseUrl}/portal/jobs/${jobId}/pages/1/image?w=160`, { redirect: 'manual' })).status, 303);
  });

  test('a JPEG 2000 page, which browsers do not show, is served as JPEG', async () => {
    const jp2 = await readFile(path.resolve(import.meta.dirname, '../fixtures/jpeg2000/copiste-lines.jp2'));
    const submitted = await client.submit(await makeZip([{ name: 'master.jp2', data: jp2 }]), { key: acme.key });
    await waitForState(client, { key: acme.key }, submitted.body.job_id, ['done']);
    const response = await fetch(`${baseUrl}/portal/jobs/${submitted.body.job_id}/pages/1/image?w=160`, {
      headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'image/jpeg');
    const meta = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 160, Math.round((160 * 192) / 1261)]);
  });

  test('a page image that cannot be decoded answers 422 with the reason, not 500', async () => {
    // Its header is whole (intake measures it), its pixels are cut off half way.
    const page = await readFile(path.resolve(import.meta.dirname, '../fixtures/pages/copiste_wikitexte_0219_2.jpg'));
    const submitted = await client.submit(await makeZip([{ name: 'cut.jpg', data: page.subarray(0, page.length >> 1) }]), {
      key: acme.key,
    });
    const jobId = submitted.body.job_id;
    await waitForState(client, { key: acme.key }, jobId, ['done', 'failed']);
    const response = await fetch(`${baseUrl}/portal/jobs/${jobId}/pages/1/image?w=160`, {
      headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
    });
    assert.equal(response.status, 422);
    assert.match(await response.text(), /The page image cannot be shown/);
  });

  test("another account's user finds neither the page nor its image", async () => {
    const rival = await portalUser(runtime, baseUrl, 'rival', 'rival-viewer@example.org');
    assert.equal((await rival.get(`/portal/jobs/${jobId}/pages/1`)).status, 404);
    assert.equal((await rival.get(`/portal/jobs/${jobId}/pages/1/image?w=160`)).status, 404);
    assert.equal((await user.get(`/portal/jobs/${jobId}/pages/3`)).status, 404);
  });
});
