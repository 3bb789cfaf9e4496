// Bring your own layout over HTTP, with the real pipelines: a ZIP whose first page comes with
// its ALTO file and whose second does not; the first page keeps the file's regions, lines and
// ids (only recognition, correction and export run), the second is detected, and the archive
// manifest says which is which. An unusable layout file is a 400 problem+json naming it.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { createTestDatabase } from '../support/database.ts';
import { testConfig } from '../support/engine.ts';
import { API_TEST_ENV, createCredentials, makeZip, startApiServer, waitForState, type Auth } from '../support/http-client.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/export');
const databaseUrl = await createTestDatabase();
const env = { WORKER_CONCURRENCY: '2', PAGE_RETRY_LIMIT: '0' };
const pipelines = await defaultPipelines(await testConfig(databaseUrl, { ...API_TEST_ENV, ...env }), createLogger('silent'));
const server = await startApiServer(databaseUrl, { env, pipelines });
after(() => server.close());
const auth: Auth = { key: (await createCredentials(server.runtime, 'byo-layout')).key };

const zolaXml = await readFile(path.join(FIXTURES, 'cremma19_zola_f207.xml'));
const zolaImage = await readFile(path.join(FIXTURES, 'cremma19_zola_f207.jpg'));
const draculaImage = await readFile(path.join(FIXTURES, 'fondue_en_print_dracula_page_51.png'));

test('a page with its own ALTO keeps its regions, lines and order; the manifest says layout_source "uploaded"', async () => {
  const zip = await makeZip([
    { name: 'scans/1_zola.jpg', data: zolaImage },
    { name: 'scans/1_zola.xml', data: zolaXml },
    { name: 'scans/2_dracula.png', data: draculaImage },
  ]);
  const submitted = await server.client.submit(zip, auth, { pdf_format: 'none' });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  assert.equal(submitted.body.page_count, 2);
  const status = await waitForState(server.client, auth, submitted.body.job_id, ['done', 'failed'], 300_000);
  assert.equal(status.state, 'done', status.error_message);

  const download = await server.client.get(status.result_url, auth);
  assert.equal(download.status, 200);
  const checked = await checkResultArchive(download.raw);
  const [zola, dracula] = checked.manifest.pages;
  assert.equal(zola.layout_source, 'uploaded');
  assert.equal(dracula.layout_source, 'detected');

  // The file's 25 lines in its 2 blocks, with its own ids, in its order, each read.
  const fileLineIds = [...zolaXml.toString('utf8').matchAll(/<TextLine[^>]*ID="([^"]+)"/g)].map((match) => match[1]);
  const fileBlockIds = [...zolaXml.toString('utf8').matchAll(/<TextBlock[^>]*ID="([^"]+)"/g)].map((match) => match[1]);
  assert.equal(zola.lines, 25);
  assert.equal(zola.regions, fileBlockIds.length);
  const pageXml = checked.files.get(zola.files.page)!.toString('utf8');
  const exportedLineIds = [...pageXml.matchAll(/<TextLine[^>]*id="([^"]+)"/g)].map((match) => match[1]);
  assert.deepEqual(exportedLineIds, fileLineIds);
  assert.deepEqual(
    [...pageXml.matchAll(/<TextRegion[^>]*id="([^"]+)"/g)].map((match) => match[1]),
    fileBlockIds,
  );
  // Recognition ran on them: the page has text.
  assert.ok(checked.pages[0].text.replace(/\s/g, '').length > 200, checked.pages[0].text);
  // The printed page without a layout file is detected and read as before.
  assert.match(checked.pages[1].text, /Holmwood/);
});

test('an unusable layout file is refused at upload: 400 problem+json with its code, naming the entry', async () => {
  const xxe = zolaXml.toString('utf8').replace('<alto', '<!DOCTYPE alto [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<alto');
  const cases: { xml: string | Buffer; code: string; detail: RegExp }[] = [
    { xml: xxe, code: 'layout_unsafe_xml', detail: /entry "scans\/1.xml": .*document type declaration/ },
    { xml: '<html/>', code: 'layout_invalid', detail: /entry "scans\/1.xml": .*root element is <html>/ },
    {
      xml: await readFile(path.join(FIXTURES, 'ocrd_kant_aufklaerung_1784_0017.xml')),
      code: 'layout_size_mismatch',
      detail: /entry "scans\/1.xml": .*1457×2083 page/,
    },
  ];
  for (const { xml, code, detail } of cases) {
    const zip = await makeZip([
      { name: 'scans/1.jpg', data: zolaImage },
      { name: 'scans/1.xml', data: Buffer.from(xml) },
    ]);
    const response = await server.client.submit(zip, auth);
    assert.equal(response.status, 400, `${code}: ${JSON.stringify(response.body)}`);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.body.code, code);
    assert.match(response.body.detail, detail);
  }
  const orphan = await makeZip([
    { name: 'scans/1.jpg', data: zolaImage },
    { name: 'scans/2.xml', data: zolaXml },
  ]);
  const response = await server.client.submit(orphan, auth);
  assert.equal(response.status, 400);
  assert.equal(response.body.code, 'layout_unmatched');
  assert.match(response.body.detail, /"scans\/2.xml"/);
});
