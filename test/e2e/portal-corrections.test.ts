// Correcting a page in the portal (docs/portal.md, "The page viewer"), issue 42: over plain HTTP,
// the save endpoint (the session's CSRF token, JSON for the editor, a redirect without script),
// the refusals, another account's 404, the per-page downloads with the corrections; in a real
// headless Chromium (Debian's, driven by playwright-core): open a done job's page, zoom, select a
// line, correct two lines in place (Enter saves and goes on, Esc cancels), reload and see them,
// move with ↑/↓, download the page's PageXML and find the corrected text, the warning on leaving
// with an unsaved edit, axe-core clean. Screenshots of the zoomed viewer and of a line being edited
// go to PORTAL_SCREENSHOTS_DIR (docs/images when regenerating the docs), else a temporary
// directory. The browser test skips, saying why, only when no Chromium is installed.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { PagePipeline } from '../../src/pipeline/pipeline.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, FIXTURES, makeZip, startApiServer, waitForState } from '../support/http-client.ts';
import { csrfTokenOf, portalUser, type PortalClient, TEST_PASSWORD } from '../support/portal-client.ts';
import { testExportPipeline } from '../support/test-pipelines.ts';
import { viewerPagePipeline } from '../support/viewer-pipeline.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => Boolean(p),
);
const chromium = CANDIDATES.find((candidate) => existsSync(candidate));
const skip = chromium ? false : `no Chromium installed (looked at ${CANDIDATES.join(', ')}; apt-get install chromium)`;
if (skip) console.log(`# portal corrections browser test skipped: ${skip}`);

const databaseUrl = await createTestDatabase();
// The viewer's test pipeline, but a page named blank… has no lines.
const viewerPages = viewerPagePipeline();
const pagePipeline: PagePipeline = {
  async processPage(task, context) {
    const result = await viewerPages.processPage(task, context);
    return task.page.name.startsWith('blank') ? { ...result, regions: [] } : result;
  },
};
const server = await startApiServer(databaseUrl, {
  env: { TRAINER: 'on' },
  pipelines: { page: pagePipeline, export: testExportPipeline() },
});
after(() => server.close());
const { runtime, baseUrl, client } = server;
const acme = await createCredentials(runtime, 'acme');
await createCredentials(runtime, 'rival');
const scan = await readFile(path.join(FIXTURES, 'pages/copiste_wikitexte_0219_2.jpg'));

async function doneJob(pages = 2): Promise<string> {
  const submitted = await client.submit(await makeZip(Array.from({ length: pages }, (_, i) => ({ name: `p${i + 1}.jpg`, data: scan }))), {
    key: acme.key,
  });
  await waitForState(client, { key: acme.key }, submitted.body.job_id, ['done']);
  return submitted.body.job_id as string;
}

describe('the page viewer’s save and downloads over HTTP', () => {
  let user: PortalClient;
  let jobId = '';
  let token = '';
  const viewer = () => `/portal/jobs/${jobId}/pages/1`;
  const save = (fields: Record<string, string>, accept = 'application/json') =>
    fetch(`${baseUrl}${viewer()}/text`, {
      method: 'POST',
      headers: {
        Accept: accept,
        'Content-Type': 'application/x-www-form-urlencoded',
        Cookie: `hwr_session=${user.cookies.get('hwr_session')}`,
      },
      body: new URLSearchParams({ _csrf: token, ...fields }),
      redirect: 'manual',
    });

  test('a done job’s page carries the editor, its save address and the session’s token, and the downloads', async () => {
    user = await portalUser(runtime, baseUrl, 'acme', 'editor@example.org');
    jobId = await doneJob();
    const page = await user.get(viewer());
    assert.equal(page.status, 200);
    token = /data-csrf="([^"]+)"/.exec(page.text)![1];
    assert.equal(token, csrfTokenOf(page.text, '/portal/sign-out'));
    assert.ok(page.text.includes(`data-editor="${viewer()}/text"`));
    for (const name of ['page.txt', 'pagexml.xml', 'alto.xml']) assert.ok(page.text.includes(`href="${viewer()}/download/${name}"`), name);
  });

  test('a save answers JSON with the line, records the user, and the page then shows it corrected', async () => {
    const saved = await save({ line: 'r1l2', text: 'Dear Madam,' });
    assert.equal(saved.status, 200);
    assert.deepEqual(await saved.json(), {
      version: 1,
      corrected_lines: 1,
      lines: [{ id: 'r1l2', text: 'Dear Madam,', machine_text: 'Dear Sir,', corrected_text: 'Dear Madam,' }],
    });
    const page = await user.get(viewer());
    assert.match(page.text, /<li id="text-r1l2" data-line="r1l2" data-text="Dear Madam," class="corrected">/);
    assert.match(page.text, /<span class="badge">corrected<\/span> machine reading: Dear Sir,/);
    const timeline = await client.get(`/v1/process-scan/${jobId}/timeline`, { key: acme.key });
    const entry = (timeline.body.entries as Array<{ type: string; actor: unknown }>).find((e) => e.type === 'PageTextCorrected');
    assert.deepEqual(entry?.actor, { kind: 'user', email: 'editor@example.org' });
  });

  test('without script the save redirects back to the page, which says so once', async () => {
    const saved = await save({ line: 'r2l1', text: 'page 1 smudged' }, 'text/html');
    assert.equal(saved.status, 303);
    assert.equal(saved.headers.get('location'), viewer());
    const page = await user.get(viewer());
    assert.match(page.text, /Saved: 1 line\./);
    assert.doesNotMatch((await user.get(viewer())).text, /Saved: 1 line\./);
  });

  test('refusals: a forged token 403, an unknown line 404, a line break 400, as JSON; another account 404', async () => {
    assert.equal((await save({ _csrf: 'forged', line: 'r1l1', text: 'x' })).status, 403);
    const unknown = await save({ line: 'nope', text: 'x' });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'unknown_line');
    const broken = await save({ line: 'r1l1', text: 'two\nlines' });
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as { error: { code: string } }).error.code, 'line_text_invalid_characters');
    assert.equal((await save({ line: 'r1l1' })).status, 400);

    const rival = await portalUser(runtime, baseUrl, 'rival', 'rival-editor@example.org');
    const rivalToken = csrfTokenOf((await rival.get('/portal/jobs')).text, '/portal/sign-out');
    assert.equal((await rival.get(viewer())).status, 404);
    assert.equal((await rival.post(`${viewer()}/text`, { _csrf: rivalToken, line: 'r1l1', text: 'mine' })).status, 404);
    assert.equal((await rival.get(`${viewer()}/download/pagexml.xml`)).status, 404);
    const untouched = await client.get(`/v1/process-scan/${jobId}/pages/1`, { key: acme.key });
    assert.equal(
      (untouched.body.lines as Array<{ id: string; text: string }>).find((line) => line.id === 'r1l1')?.text.includes('mine'),
      false,
    );
  });

  test('the page’s text, PageXML and ALTO downloads carry the corrections', async () => {
    const text = await user.get(`${viewer()}/download/page.txt`);
    assert.equal(text.status, 200);
    assert.match(text.headers.get('content-disposition') ?? '', /attachment; filename="0001_p1\.txt"/);
    assert.match(text.text, /Dear Madam,\npage 1 smudged|Dear Madam,[\s\S]*page 1 smudged/);
    const pageXml = await user.get(`${viewer()}/download/pagexml.xml`);
    assert.equal(pageXml.status, 200);
    assert.match(pageXml.headers.get('content-type') ?? '', /^application\/vnd\.prima\.page\+xml/);
    assert.match(pageXml.text, /custom="correction \{source:manual;\}"/);
    assert.ok(pageXml.text.includes('Dear Madam,'));
    const alto = await user.get(`${viewer()}/download/alto.xml`);
    assert.match(alto.text, /CS="true"/);
    assert.equal((await user.get(`${viewer()}/download/page.pdf`)).status, 404);
  });

  test('a page without lines says so, with no editor and no empty list', async () => {
    const submitted = await client.submit(await makeZip([{ name: 'blank.jpg', data: scan }]), { key: acme.key });
    // The export stand-in (test-pipelines.ts) reads each page's first line, so this job fails at its
    // export; its page is recognised all the same, which is what the viewer shows.
    await waitForState(client, { key: acme.key }, submitted.body.job_id, ['done', 'failed']);
    const page = await user.get(`/portal/jobs/${submitted.body.job_id}/pages/1`);
    assert.equal(page.status, 200);
    assert.match(page.text, /No text lines were found on this page, so there is nothing to read or correct here\./);
    assert.ok(!page.text.includes('<ol class="lines"'));
    assert.ok(page.text.includes(`src="/portal/jobs/${submitted.body.job_id}/pages/1/image?w=1200"`));
  });

  test('the job page tells its history in words, the correction by the user’s e-mail, the raw events behind a toggle', async () => {
    const jobPage = await user.get(`/portal/jobs/${jobId}`);
    assert.equal(jobPage.status, 200);
    assert.match(jobPage.text, /<h2>Timeline<\/h2><ol class="history">/);
    assert.match(jobPage.text, /submitted: 2 pages<\/span> <span class="who">by the API key <bdi>test key<\/bdi><\/span>/);
    assert.match(
      jobPage.text,
      new RegExp(
        `<a href="/portal/jobs/${jobId}/pages/1">page 1: 1 line corrected</a></span> <span class="who">by <bdi>editor@example.org</bdi>`,
      ),
    );
    assert.match(jobPage.text, /<del><bdi>Dear Sir,<\/bdi><\/del> → <ins><bdi>Dear Madam,<\/bdi><\/ins>/);
    assert.match(jobPage.text, /<details class="raw-events"><summary>Raw events \(JSON, for auditors\)<\/summary>/);
    assert.ok(jobPage.text.includes('<td>PageTextCorrected</td>'));
    // No user or key id in the readable part.
    const readable = jobPage.text.slice(jobPage.text.indexOf('<ol class="history">'), jobPage.text.indexOf('<details'));
    assert.doesNotMatch(readable, /user:[0-9a-f-]{36}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?!\/pages)/);
  });

  test('train on these pages: too few lines said on the job page; enough (checked pages) goes to the model’s page; another account 404', async () => {
    const action = `/portal/jobs/${jobId}/train`;
    const jobPage = await user.get(`/portal/jobs/${jobId}`);
    assert.match(jobPage.text, /<input type="checkbox" name="pages" value="1" checked>/);
    assert.match(jobPage.text, /<input type="checkbox" name="pages" value="2">/);
    const formToken = csrfTokenOf(jobPage.text, action);
    const tooFew = await user.post(action, { _csrf: formToken, pages: '1' });
    assert.equal(tooFew.status, 303);
    assert.equal(tooFew.headers.get('location'), `/portal/jobs/${jobId}`);
    const refused = await user.get(`/portal/jobs/${jobId}`);
    assert.equal(refused.status, 400);
    assert.match(refused.text, /No training started: 2 usable lines on 1 page; a training needs at least 20/);
    const none = await user.post(action, { _csrf: formToken });
    assert.equal(none.status, 303);
    assert.match((await user.get(`/portal/jobs/${jobId}`)).text, /Choose at least one page/);

    const big = await doneJob(7);
    const bigPage = await user.get(`/portal/jobs/${big}`);
    const body = new URLSearchParams({ _csrf: csrfTokenOf(bigPage.text, `/portal/jobs/${big}/train`), label: 'Copiste' });
    for (let n = 1; n <= 7; n++) body.append('checked_pages', String(n));
    const started = await fetch(`${baseUrl}/portal/jobs/${big}/train`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
      body,
      redirect: 'manual',
    });
    assert.equal(started.status, 303);
    const location = started.headers.get('location') ?? '';
    assert.match(location, /^\/portal\/models\/[0-9a-f-]{36}$/);
    const modelPage = await user.get(location);
    assert.equal(modelPage.status, 200);
    assert.match(modelPage.text, /Your ground truth is in: 21 lines on 7 pages\. The training is queued\./);
    assert.match(modelPage.text, /Copiste/);

    const rival = await portalUser(runtime, baseUrl, 'rival', 'rival-trainer@example.org');
    const rivalToken = csrfTokenOf((await rival.get('/portal/jobs')).text, '/portal/sign-out');
    assert.equal((await rival.post(`/portal/jobs/${big}/train`, { _csrf: rivalToken, checked_pages: '1' })).status, 404);
  });
});

test('Correcting a page in a real browser: zoom, select, edit two lines, reload, keyboard, PageXML', { skip }, async () => {
  const { chromium: playwright } = await import('playwright-core');
  await portalUser(runtime, baseUrl, 'acme', 'ada@example.org');
  const jobId = await doneJob();
  const shots = process.env.PORTAL_SCREENSHOTS_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'hwr-portal-corrections-')));
  await mkdir(shots, { recursive: true });
  const browser = await playwright.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
  after(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(String(error)));
  const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const accessible = async (name: string) => {
    const found = (await page.evaluate(
      `${axeSource};\naxe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] })
        .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) })))`,
    )) as Array<{ id: string; impact: string | null; nodes: string[] }>;
    assert.deepEqual(
      found.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical'),
      [],
      `${name}: no serious or critical accessibility violation`,
    );
  };
  const shot = async (name: string) => {
    const file = path.join(shots, `${name}.png`);
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: file });
    console.log(`# screenshot ${name}: ${file}`);
  };

  await page.goto(`${baseUrl}/portal/jobs/${jobId}/pages/1`);
  await page.getByLabel('Email').fill('ada@example.org');
  await page.getByLabel('Password').fill(TEST_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${baseUrl}/portal/jobs/${jobId}/pages/1`);
  await accessible('viewer');

  // Zoom: the viewBox narrows and the larger image is fetched.
  const svg = page.locator('figure[data-zoom] svg');
  const fullWidth = Number((await svg.getAttribute('viewBox'))!.split(' ')[2]);
  await page.getByRole('button', { name: 'Zoom in' }).click();
  await page.getByRole('button', { name: 'Zoom in' }).click();
  const zoomedWidth = Number((await svg.getAttribute('viewBox'))!.split(' ')[2]);
  assert.ok(Math.abs(zoomedWidth - fullWidth / 2.25) < 1, `${zoomedWidth} is the page's width / 2.25`);
  assert.match((await page.locator('figure[data-zoom] image').getAttribute('href')) ?? '', /image\?w=2400$/);
  await page.locator('figure[data-zoom] output').getByText('225 %').waitFor();

  // Select a line from its outline: its text is selected, the outline brought into view.
  await page.locator('#line-r2l1').click({ force: true });
  assert.match((await page.locator('#text-r2l1').getAttribute('class')) ?? '', /selected/);
  assert.match((await page.locator('#line-r2l1').getAttribute('class')) ?? '', /selected/);
  const [, y, , h] = (await svg.getAttribute('viewBox'))!.split(' ').map(Number);
  const box = (await page.evaluate("(({ y, height }) => ({ y, height }))(document.getElementById('line-r2l1').getBBox())")) as {
    y: number;
    height: number;
  };
  assert.ok(box.y >= y && box.y + box.height <= y + h, `the selected outline (${box.y}+${box.height}) is in view (${y}+${h})`);
  await shot('portal-viewer-zoomed');

  // Edit the second line in place: click, type, Esc cancels.
  await page.locator('#text-r1l2 .line-text').click();
  const input = page.getByRole('textbox', { name: 'Text of line 2' });
  await input.fill('Dear Madam,');
  await shot('portal-line-editing');
  await accessible('viewer-editing');
  await input.press('Escape');
  assert.equal(await page.locator('input.line-input').count(), 0);
  assert.equal((await page.locator('#text-r1l2 .line-text').textContent())?.trim(), 'Dear Sir,');

  // Enter edits; Enter saves and goes on to the next line, which is edited and saved too.
  await page.locator('#text-r1l2 .line-text').focus();
  await page.keyboard.press('Enter');
  await input.fill('Dear Madam,');
  await input.press('Enter');
  const next = page.getByRole('textbox', { name: 'Text of line 3' });
  await next.waitFor();
  assert.equal(await next.inputValue(), 'page 1 smudge');
  await next.fill('page 1 smudged');
  await next.press('Enter');
  await page.getByText('Line 3 saved.').waitFor();
  assert.match((await page.locator('#text-r1l2').getAttribute('class')) ?? '', /corrected/);

  // Reload: both corrections are there, marked.
  await page.reload();
  assert.equal((await page.locator('#text-r1l2 .line-text').textContent())?.trim(), 'Dear Madam,');
  assert.equal((await page.locator('#text-r2l1 .line-text').textContent())?.trim(), 'page 1 smudged');
  assert.equal(await page.locator('ol.lines li.corrected').count(), 2);
  assert.equal(await page.locator('polygon.line.corrected').count(), 2);

  // The keyboard: ↓ and ↑ move between lines, selecting each.
  await page.locator('#text-r1l1 .line-text').focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate("document.activeElement?.closest('li')?.id"), 'text-r1l2');
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate("document.activeElement?.closest('li')?.id"), 'text-r2l1');
  await page.keyboard.press('ArrowUp');
  assert.equal(await page.evaluate("document.activeElement?.closest('li')?.id"), 'text-r1l2');
  assert.match((await page.locator('#line-r1l2').getAttribute('class')) ?? '', /selected/);

  // An unsaved edit: leaving the page asks first.
  await page.keyboard.press('Enter');
  await page.getByRole('textbox', { name: 'Text of line 2' }).fill('Dear Sirs,');
  let asked = '';
  page.once('dialog', (dialog) => {
    asked = dialog.type();
    void dialog.dismiss();
  });
  await page.getByRole('link', { name: 'Back to the job' }).click();
  await waitFor(() => asked === 'beforeunload');
  assert.match(page.url(), /\/pages\/1$/);
  await page.getByRole('textbox', { name: 'Text of line 2' }).press('Escape');

  // The page's PageXML downloads with the corrected text and the marker.
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'PageXML' }).click()]);
  const xml = await readFile((await download.path())!, 'utf8');
  assert.ok(xml.includes('Dear Madam,') && xml.includes('page 1 smudged'));
  assert.match(xml, /custom="correction \{source:manual;\}"/);

  // The job page: the correction in the timeline by the user's e-mail; the raw events behind their toggle.
  await page.getByRole('link', { name: 'Back to the job' }).click();
  await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  const corrections = page.locator('ol.history > li.event-PageTextCorrected');
  assert.equal(await corrections.count(), 2);
  assert.match((await corrections.first().textContent()) ?? '', /page 1: 1 line corrected by ada@example\.org\s*Dear Sir, → Dear Madam,/);
  assert.equal(await page.getByRole('cell', { name: 'PageTextCorrected', exact: true }).count(), 0, 'the raw events are folded');
  await accessible('job');
  await page.getByText('Raw events (JSON, for auditors)').click();
  assert.equal(await page.getByRole('cell', { name: 'PageTextCorrected', exact: true }).count(), 2);
  await accessible('job-raw-events');
  assert.deepEqual(problems, []);
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
