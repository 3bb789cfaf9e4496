// IIIF over real HTTP (docs/iiif.md, issue 44 item 3): a real job (ground-truth pages as the
// recognizer's answer, the real export), a corrected line; the manifest, info.json, image,
// annotation and search answers checked against the IIIF specifications' rules (ids, types,
// contexts, sizes) and the OpenAPI document; the signed URLs without a key, forged, expired,
// revoked, another account's; then the manifest in Mirador 4 (from npm) in Chromium, from another
// origin, its lines shown as annotations, with a screenshot.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import type { PagePipeline } from '../../src/pipeline/pipeline.ts';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { revokeApiKey } from '../../src/use-cases/accounts.ts';
import { signIiifToken } from '../../src/use-cases/iiif.ts';
import { createTestDatabase } from '../support/database.ts';
import { type Auth, createCredentials, FIXTURES, makeZip, startApiServer, waitForState } from '../support/http-client.ts';
import { pageResultFromGroundTruth } from '../support/page-result-from-ground-truth.ts';
import { checkIiifJson } from '../support/iiif-rules.ts';
import { createHash } from 'node:crypto';

const PAGES: Record<string, { imagePath: string; xmlPath: string }> = {
  'f207.jpg': {
    imagePath: path.join(FIXTURES, 'export/cremma19_zola_f207.jpg'),
    xmlPath: path.join(FIXTURES, 'export/cremma19_zola_f207.xml'),
  },
  'dracula.png': {
    imagePath: path.join(FIXTURES, 'export/fondue_en_print_dracula_page_51.png'),
    xmlPath: path.join(FIXTURES, 'export/fondue_en_print_dracula_page_51.xml'),
  },
};

const pagePipeline: PagePipeline = {
  async processPage(task, context) {
    for (const step of ['layout', 'recognition'] as const) await context.enterStep(step);
    const source = PAGES[path.posix.basename(task.page.name)];
    return pageResultFromGroundTruth({ ...source, name: task.page.name, pageNumber: task.page.pageNumber });
  },
};

const server = await startApiServer(await createTestDatabase(), { pipelines: { page: pagePipeline, export: createExportPipeline() } });
after(() => server.close());
const { client, runtime, baseUrl } = server;
const owner = await createCredentials(runtime, 'iiif-owner');
const auth: Auth = { key: owner.key };
const stranger = await createCredentials(runtime, 'iiif-stranger');

const zip = await makeZip([
  { name: 'p1/f207.jpg', data: await readFile(PAGES['f207.jpg'].imagePath) },
  { name: 'p2/dracula.png', data: await readFile(PAGES['dracula.png'].imagePath) },
]);
const submitted = await client.submit(zip, auth, { pipeline_steps: 'layout,recognition,export' });
assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
const jobId: string = submitted.body.job_id;
assert.equal((await waitForState(client, auth, jobId, ['done'], 60_000)).state, 'done');

// A person corrects the first line of page 1: the annotations and search read the correction.
const page1 = (await client.get(`/v1/process-scan/${jobId}/pages/1`, auth)).body;
const corrected = page1.lines[0];
const CORRECTION = 'Ceci est une ligne corrigée à la main';
assert.equal(
  (
    await client.request('PUT', `/v1/process-scan/${jobId}/pages/1/text`, {
      auth,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ lines: [{ id: corrected.id, text: CORRECTION }] }),
    })
  ).status,
  200,
);

const entry = await client.get(`/v1/process-scan/${jobId}/iiif/manifest`, auth);

describe('IIIF', () => {
  test('the manifest: Presentation 3 rules, a canvas per page, signed URLs', async () => {
    assert.equal(entry.status, 200, JSON.stringify(entry.body));
    assert.match(
      entry.headers.get('content-type')!,
      /^application\/ld\+json;profile="http:\/\/iiif.io\/api\/presentation\/3\/context.json"/,
    );
    assert.equal(entry.headers.get('access-control-allow-origin'), '*');
    const manifest = entry.body;
    assert.deepEqual(checkIiifJson(manifest), []);
    assert.equal(entry.headers.get('content-location'), manifest.id);
    assert.match(manifest.id, new RegExp(`^${baseUrl}/v1/process-scan/${jobId}/iiif/[0-9a-f-]{36}\\.\\d+\\.[A-Za-z0-9_-]{43}/manifest$`));
    assert.equal(manifest.items.length, 2);
    const [canvas1, canvas2] = manifest.items;
    const f207 = await sharp(PAGES['f207.jpg'].imagePath).metadata();
    assert.deepEqual([canvas1.width, canvas1.height], [f207.width, f207.height]);
    assert.equal(canvas2.items[0].items[0].body.service[0].type, 'ImageService3');
    assert.deepEqual(manifest.service, [{ id: manifest.id.replace(/manifest$/, 'search'), type: 'SearchService2' }]);

    // The signed URL serves the same manifest without a key, and only that job.
    const again = await client.get(manifest.id, null);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, manifest);
    const other = await client.get(manifest.id.replace(jobId, stranger.accountId), null);
    assert.equal(other.status, 401);
  });

  test('the Image API: info.json, regions, sizes, rotations, qualities, formats', async () => {
    const canvas = entry.body.items[0];
    const service = canvas.items[0].items[0].body.service[0].id as string;
    const base = await client.get(service, null);
    assert.equal(base.status, 303);
    assert.equal(base.headers.get('location'), `${service}/info.json`);
    const info = (await client.get(`${service}/info.json`, null)).body;
    assert.deepEqual(checkIiifJson(info), []);
    assert.equal(info.id, service);
    assert.equal(info.profile, 'level1');
    assert.deepEqual([info.width, info.height], [canvas.width, canvas.height]);
    const get = async (request: string) => {
      const answer = await client.get(`${service}/${request}`, null);
      assert.equal(answer.status, 200, `${request}: ${answer.raw.toString().slice(0, 300)}`);
      return { type: answer.headers.get('content-type'), meta: await sharp(answer.raw).metadata() };
    };
    const full = await get('full/max/0/default.jpg');
    assert.deepEqual([full.type, full.meta.width, full.meta.height], ['image/jpeg', canvas.width, canvas.height]);
    const tile = await get('100,200,512,256/256,/0/default.jpg');
    assert.deepEqual([tile.meta.width, tile.meta.height], [256, 128]);
    const gray = await get('pct:10,10,50,50/!200,200/0/gray.png');
    assert.equal(gray.type, 'image/png');
    assert.equal(gray.meta.channels, 1);
    assert.ok(Math.max(gray.meta.width!, gray.meta.height!) === 200);
    const turned = await get('square/,100/90/default.jpg');
    assert.deepEqual([turned.meta.width, turned.meta.height], [100, 100]);
    const sideways = await get('0,0,300,100/150,/!270/color.jpg');
    assert.deepEqual([sideways.meta.width, sideways.meta.height], [50, 150]);
    const tileOfTile = info.tiles[0];
    const scaled = await get(`full/${Math.ceil(canvas.width / tileOfTile.scaleFactors.at(-1))},/0/default.jpg`);
    assert.ok(scaled.meta.width! <= 512);
    for (const [request, status] of [
      ['full/max/45/default.jpg', 501],
      ['full/max/0/bitonal.jpg', 501],
      ['full/max/0/default.webp', 501],
      ['full/99999,/0/default.jpg', 400],
      ['0,0,0,10/max/0/default.jpg', 400],
      [`${canvas.width + 5},0,10,10/max/0/default.jpg`, 400],
      ['nonsense/max/0/default.jpg', 400],
    ] as const) {
      const answer = await client.get(`${service}/${request}`, null);
      assert.equal(answer.status, status, request);
      assert.equal(answer.body.code, status === 501 ? 'iiif_feature_not_supported' : 'invalid_iiif_request');
    }
  });

  test('the lines and words as Web Annotations, with the correction', async () => {
    const canvas = entry.body.items[0];
    const [linesRef, wordsRef] = canvas.annotations;
    const lines = (await client.get(linesRef.id, null)).body;
    assert.deepEqual(checkIiifJson(lines), []);
    assert.equal(lines.id, linesRef.id);
    const expected = page1.lines.filter((line: { text: string }) => line.text.trim() !== '');
    assert.equal(lines.items.length, expected.length);
    for (const annotation of lines.items) {
      assert.equal(annotation.motivation, 'supplementing');
      assert.equal(annotation.body.type, 'TextualBody');
      const [x, y, w, h] = /#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(annotation.target)!.slice(1).map(Number);
      assert.ok(annotation.target.startsWith(`${canvas.id}#`));
      assert.ok(x + w <= canvas.width && y + h <= canvas.height && w > 0 && h > 0);
    }
    assert.equal(lines.items[0].body.value, CORRECTION);
    assert.match(lines.items[0].label.en[0], /^corrected; machine reading: /);
    assert.deepEqual(
      lines.items.slice(1).map((annotation: { body: { value: string } }) => annotation.body.value),
      expected.slice(1).map((line: { text: string }) => line.text),
    );
    const words = (await client.get(wordsRef.id, null)).body;
    assert.deepEqual(checkIiifJson(words), []);
    assert.deepEqual(
      words.items.slice(0, CORRECTION.split(' ').length).map((annotation: { body: { value: string } }) => annotation.body.value),
      CORRECTION.split(' '),
    );
  });

  test('Content Search 2 over the job: exact, without accents, the corrected text', async () => {
    const search = entry.body.service[0].id as string;
    const found = (await client.get(`${search}?q=${encodeURIComponent('CORRIGEE a la')}`, null)).body;
    assert.deepEqual(checkIiifJson(found), []);
    assert.equal(found.items.length, 1);
    assert.equal(found.items[0].target.source.id, entry.body.items[0].id);
    assert.equal(found.annotations[0].items[0].target.selector[0].exact, 'corrigée à la');
    const machine = page1.lines[3].text.split(' ').find((word: string) => word.length > 4);
    const byWord = (await client.get(`${search}?q=${encodeURIComponent(machine)}`, null)).body;
    assert.ok(byWord.items.length >= 1);
    assert.equal(
      (await client.get(`${search}?q=${encodeURIComponent(corrected.machine_text)}`, null)).body.items.length,
      0,
      'the machine reading of a corrected line is not found',
    );
    assert.equal((await client.get(`${search}?q=zzzqqq`, null)).body.items.length, 0);
  });

  test('signed URLs: forged, expired, another job, another account, a revoked key', async () => {
    const manifestUrl = entry.body.id as string;
    const token = /iiif\/([^/]+)\/manifest$/.exec(manifestUrl)![1];
    const forged = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    assert.equal((await client.get(manifestUrl.replace(token, forged), null)).status, 401);
    assert.equal((await client.get(manifestUrl.replace(token, 'nonsense'), null)).status, 401);
    const keyHash = createHash('sha256').update(owner.key).digest('hex');
    const expired = signIiifToken(jobId, { keyId: owner.keyId, keyHash }, 60, Date.now() - 3600_000).token;
    const answer = await client.get(manifestUrl.replace(token, expired), null);
    assert.equal(answer.status, 401);
    assert.match(answer.body.detail, /expired/);
    // Another account's key cannot fetch the manifest; another account's token does not open this job.
    assert.equal((await client.get(`/v1/process-scan/${jobId}/iiif/manifest`, { key: stranger.key })).status, 404);
    const strangers = signIiifToken(
      jobId,
      { keyId: stranger.keyId, keyHash: createHash('sha256').update(stranger.key).digest('hex') },
      600,
    ).token;
    assert.equal((await client.get(manifestUrl.replace(token, strangers), null)).status, 404);
    assert.equal((await client.get(`/v1/process-scan/${jobId}/iiif/manifest?ttl=5`, auth)).status, 400);
    // Revoking the key ends its URLs at once.
    const spare = await runtime.db.pool.query<{ key_id: string }>('select key_id from api_keys where account_id = $1', [owner.accountId]);
    assert.equal(spare.rows.length, 1);
    const second = await createCredentials(runtime, 'iiif-revoked');
    const job2 = (await client.submit(zip, { key: second.key }, { pipeline_steps: 'layout,recognition,export' })).body.job_id;
    await waitForState(client, { key: second.key }, job2, ['done'], 60_000);
    const signed = (await client.get(`/v1/process-scan/${job2}/iiif/manifest`, { key: second.key })).body.id;
    assert.equal((await client.get(signed, null)).status, 200);
    await revokeApiKey(runtime.bus, second.keyId);
    assert.equal((await client.get(signed, null)).status, 401);
  });

  const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (candidate): candidate is string => typeof candidate === 'string' && candidate.length > 0,
  );
  const chromium = CANDIDATES.find((candidate) => existsSync(candidate));
  const skip = chromium ? false : `no Chromium installed (looked at ${CANDIDATES.join(', ')}; apt-get install chromium)`;

  test('Mirador 4 in Chromium, on another origin, shows the pages and their lines as annotations', { skip, timeout: 180_000 }, async () => {
    const { chromium: playwright } = await import('playwright-core');
    const mirador = await readFile(path.join(FIXTURES, 'viewers/mirador-4.0.0.min.js'));
    const manifestUrl = entry.body.id as string;
    const viewerPage = `<!doctype html><html><head><meta charset="utf-8"><title>Mirador</title>
<style>html,body,#viewer{margin:0;width:100%;height:100%}</style></head><body><div id="viewer"></div>
<script src="/mirador.min.js"></script>
<script>
window.viewer = Mirador.viewer({
  id: 'viewer',
  annotations: { htmlSanitizationRuleSet: 'iiif', filteredMotivations: ['oa:commenting', 'oa:tagging', 'sc:painting', 'commenting', 'tagging', 'supplementing'] },
  window: { allowClose: false, sideBarOpenByDefault: true, defaultSideBarPanel: 'annotations', highlightAllAnnotations: true, panels: { annotations: true, search: true } },
  windows: [{ manifestId: ${JSON.stringify(manifestUrl)}, canvasIndex: 0 }],
  workspaceControlPanel: { enabled: false },
});
</script></body></html>`;
    const viewerServer = http.createServer((request, response) => {
      if (request.url === '/mirador.min.js') {
        response.writeHead(200, { 'Content-Type': 'text/javascript' });
        response.end(mirador);
      } else {
        response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
        response.end(viewerPage);
      }
    });
    await new Promise<void>((resolve) => viewerServer.listen(0, '127.0.0.1', resolve));
    after(() => viewerServer.close());
    // localhost, not 127.0.0.1: another origin than the API's, so CORS is exercised.
    const viewerUrl = `http://localhost:${(viewerServer.address() as AddressInfo).port}/`;

    const browser = await playwright.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
    after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
    const images: string[] = [];
    page.on('response', (response) => response.url().includes('/image/') && response.status() === 200 && images.push(response.url()));
    await page.goto(viewerUrl);
    // The canvas label in the window and the annotations panel listing the page's lines.
    await page.getByText('1: p1/f207.jpg').first().waitFor({ timeout: 60_000 });
    const annotationList = page.locator('[aria-label="Annotations"], .mirador-companion-window-body').first();
    await page.getByText(CORRECTION).first().waitFor({ timeout: 60_000 });
    await page.locator('canvas').first().waitFor({ timeout: 30_000 });
    await page.waitForTimeout(3000); // tiles settle
    assert.ok(
      images.some((url) => /\/image\/1\/.+\/default\.jpg$/.test(url)),
      `Mirador fetched image tiles: ${images.slice(0, 3).join(', ')}`,
    );
    assert.ok(await annotationList.count());
    const shots = process.env.IIIF_SCREENSHOTS_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'hwr-iiif-screenshots-')));
    await mkdir(shots, { recursive: true });
    const file = path.join(shots, 'iiif-mirador.png');
    await page.screenshot({ path: file });
    console.log(`# screenshot: Mirador with the job's page 1 and its lines as annotations: ${file}`);
    assert.deepEqual(
      // Mirador's own React 19 deprecation notice is no error of ours, nor MUI's warning when
      // Mirador selects the annotations tab before the annotations have loaded (it depends on
      // which arrives first, and the panel then shows them: the assertions above).
      errors.filter(
        (error) => !/favicon|element\.ref was removed in React 19|None of the Tabs' children match with "annotations"/.test(error),
      ),
      [],
    );
  });
});
