// The portal's page viewer on real recognition, in a real browser: a ZIP of two real scans
// submitted with a key made in the portal, processed by the real pipelines (ONNX layout and
// recognition; no LLM), watched to done on its own page (which refreshes itself) and in the jobs
// list, and a recognised line checked in the
// viewer: its text is the page result's, and selecting it draws its polygon highlighted. Then a word
// of a recognised line is searched through the header's search box (docs/search.md, "Portal"): the
// line is among the results with its thumbnail shown, and a click on it opens the viewer with the
// line selected and the word marked on the image and in the text; axe finds no serious or critical
// violation on either page. Skips, saying why, only when no Chromium is installed. Screenshots as
// portal-browser.test.ts (the search results: docs/images/portal-search-results.png).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createAccount } from '../../src/use-cases/accounts.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { createLogger } from '../../src/platform/logger.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { createTestDatabase } from '../support/database.ts';
import { makeZip, startApiServer } from '../support/http-client.ts';
import { testConfig } from '../support/engine.ts';
import { portalUser } from '../support/portal-client.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => Boolean(p),
);
const chromium = CANDIDATES.find((candidate) => existsSync(candidate));
const skip = chromium ? false : `no Chromium installed (looked at ${CANDIDATES.join(', ')}; apt-get install chromium)`;
if (skip) console.log(`# portal real-pages browser test skipped: ${skip}`);
const SCANS = path.resolve(import.meta.dirname, '../fixtures/export');

test('two real pages recognised, seen in the portal viewer and found by the portal search in a real browser', { skip }, async () => {
  const { chromium: playwright } = await import('playwright-core');
  const shots = process.env.PORTAL_SCREENSHOTS_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'hwr-portal-screenshots-')));
  await mkdir(shots, { recursive: true });
  const databaseUrl = await createTestDatabase();
  const env = { CORRECTION_PROVIDER: 'none', WORKER_CONCURRENCY: '2' };
  const pipelines = await defaultPipelines(await testConfig(databaseUrl, env), createLogger('silent'));
  const server = await startApiServer(databaseUrl, { env, pipelines });
  after(async () => {
    await server.close();
    await pipelines.close();
  });
  const { runtime, baseUrl } = server;
  await createAccount(runtime.bus, 'archive', 'test');
  const user = await portalUser(runtime, baseUrl, 'archive', 'reader@example.org');
  // The form answers 303 (Post/Redirect/Get); the page it leads to shows the key once.
  const created = await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'scanner' });
  const shown = await user.get(created.headers.get('location')!);
  const key = /<p class="secret" id="new-key">([^<]+)<\/p>/.exec(shown.text)![1];

  const zip = await makeZip([
    { name: '1_dracula.png', data: await readFile(path.join(SCANS, 'fondue_en_print_dracula_page_51.png')) },
    { name: '2_zola.jpg', data: await readFile(path.join(SCANS, 'cremma19_zola_f207.jpg')) },
  ]);
  const form = new FormData();
  form.append('scan_zip', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'pages.zip');
  const submitted = await fetch(`${baseUrl}/v1/process-scan`, { method: 'POST', headers: { 'X-API-Key': key }, body: form });
  assert.equal(submitted.status, 202);
  const jobId = ((await submitted.json()) as { job_id: string }).job_id;

  const browser = await playwright.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
  after(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.addCookies([{ name: 'hwr_session', value: user.cookies.get('hwr_session')!, url: baseUrl }]);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  // The job's own page follows the job to its end without a reload (it stayed at "processing").
  await page.goto(`${baseUrl}/portal/jobs/${jobId}`);
  await page.locator('[data-live-job] .state-done, [data-live-job] .state-failed').waitFor({ timeout: 500_000 });
  assert.equal(await page.locator('[data-live-job]').count(), 1);
  await page.goto(`${baseUrl}/portal/jobs`);
  const row = page.locator('tr', { has: page.locator(`a[href="/portal/jobs/${jobId}"]`) });
  await row.locator('.state-done, .state-failed').waitFor({ timeout: 10_000 });
  const status = (await (await fetch(`${baseUrl}/v1/process-scan/${jobId}`, { headers: { 'X-API-Key': key } })).json()) as {
    state: string;
    error?: unknown;
  };
  assert.equal(status.state, 'done', JSON.stringify(status));
  assert.match((await row.textContent())!, /2 \/ 2/);

  const { rows } = await runtime.db.pool.query<{ result_key: string }>(
    'select result_key from job_pages where job_id = $1 and page_number = 1',
    [jobId],
  );
  const result = JSON.parse((await runtime.blobs.get(rows[0].result_key)).toString()) as PageResult;
  const lines = result.regions.flatMap((region) => region.lines).filter((line) => line.text.trim().length > 0);
  assert.ok(lines.length > 3, 'the real page has recognised lines');
  const line = lines[Math.floor(lines.length / 2)];

  await page.goto(`${baseUrl}/portal/jobs/${jobId}/pages/1`);
  const text = page.locator(`#text-${line.id} .line-text`);
  assert.equal((await text.textContent())!.replace(/\s+/g, ' ').trim(), line.text.replace(/\s+/g, ' ').trim());
  // With the script a click selects the line on both sides (and edits it: the job is done; Esc leaves it as it was).
  await text.click();
  await page.keyboard.press('Escape');
  assert.match((await page.locator(`#line-${line.id}`).getAttribute('class')) ?? '', /\bselected\b/);
  assert.equal(await page.evaluate(`getComputedStyle(document.getElementById('line-${line.id}')).stroke`), 'rgb(164, 22, 26)');
  const file = path.join(shots, 'real-viewer.png');
  await page.screenshot({ path: file, fullPage: true });
  console.log(`# screenshot real-viewer (line ${line.id}: ${JSON.stringify(line.text)}): ${file}`);

  // The search: the longest word of letters alone on a recognised line of page 1, typed into the header's box.
  const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const accessible = async (name: string) => {
    const found = (await page.evaluate(
      `${axeSource};\naxe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] })
        .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })))`,
    )) as Array<{ impact: string | null }>;
    assert.deepEqual(
      found.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical'),
      [],
      `${name}: no serious or critical accessibility violation`,
    );
  };
  const candidates = lines.flatMap((candidate) =>
    candidate.words.filter((word) => /^\p{L}{4,}$/u.test(word.text)).map((word) => ({ line: candidate, word: word.text })),
  );
  assert.ok(candidates.length > 0, 'a recognised word of four letters or more');
  const sought = candidates.reduce((longest, candidate) => (candidate.word.length > longest.word.length ? candidate : longest));
  await page.goto(`${baseUrl}/portal/jobs`);
  await page.getByRole('searchbox', { name: 'Search your pages' }).fill(sought.word);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/portal\/search\?q=/);
  const hit = page.locator(`a.hit[href^="/portal/jobs/${jobId}/pages/1?line=${encodeURIComponent(sought.line.id)}&"]`);
  assert.equal(await hit.count(), 1, `the line ${sought.line.id} is found by ${JSON.stringify(sought.word)}`);
  assert.ok((await hit.locator('mark.hit').allTextContents()).some((marked) => marked.includes(sought.word)));
  const thumbnail = await hit.locator('img').elementHandle();
  await page.waitForFunction((image) => {
    const shown = image as unknown as { complete: boolean; naturalWidth: number };
    return shown.complete && shown.naturalWidth > 0;
  }, thumbnail);
  await accessible('search results');
  // The documentation's picture: the word of four letters or more on most lines, so that the results are several.
  const lineCount = new Map<string, number>();
  for (const candidate of new Set(candidates.map((each) => `${each.line.id}\n${each.word.toLowerCase()}`)))
    lineCount.set(candidate.split('\n')[1], (lineCount.get(candidate.split('\n')[1]) ?? 0) + 1);
  const common = [...lineCount].reduce((most, entry) => (entry[1] > most[1] ? entry : most))[0];
  const several = await context.newPage();
  await several.goto(`${baseUrl}/portal/search?q=${encodeURIComponent(common)}`);
  await several.locator('a.hit img').last().scrollIntoViewIfNeeded();
  await several.waitForFunction(() =>
    [
      ...(
        globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ complete: boolean }> } }
      ).document.querySelectorAll('a.hit img'),
    ].every((image) => image.complete),
  );
  const results = path.join(shots, 'portal-search-results.png');
  await several.screenshot({ path: results, fullPage: true });
  console.log(`# screenshot search results (${JSON.stringify(common)}, ${lineCount.get(common)} lines of page 1): ${results}`);
  await several.close();
  await hit.click();
  await page.waitForURL(new RegExp(`/portal/jobs/${jobId}/pages/1\\?line=`));
  assert.match((await page.locator(`#line-${sought.line.id}`).getAttribute('class')) ?? '', /\bselected\b/);
  assert.match((await page.locator(`#text-${sought.line.id}`).getAttribute('class')) ?? '', /\bselected\b/);
  assert.ok((await page.locator(`#text-${sought.line.id} mark.hit`).allTextContents()).some((marked) => marked.includes(sought.word)));
  assert.ok((await page.locator('svg rect.hit-word').count()) >= 1, 'the word is marked on the image');
  await accessible('viewer opened from the search');
  await page.screenshot({ path: path.join(shots, 'portal-search-viewer.png'), fullPage: true });
  assert.deepEqual(errors, []);
});
