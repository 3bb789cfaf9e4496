// The portal in a real headless browser (Debian's chromium driven by playwright-core): the user
// story invite → set password → sign in (keyboard only) → create a key (copy button) → submit a
// ZIP with that key through the API → see it done in the jobs list → the job page → revoke the
// key (confirm) → the API answers 401. No Content-Security-Policy violation on any page, and
// no serious or critical accessibility violation (axe-core) on any page.
// Screenshots of each page go to PORTAL_SCREENSHOTS_DIR, else a temporary directory; their
// paths are printed. Skips, saying why, only when no Chromium is installed.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createAccount } from '../../src/use-cases/accounts.ts';
import { inviteUser } from '../../src/use-cases/users.ts';
import { createTestDatabase } from '../support/database.ts';
import { pagesZip, startApiServer } from '../support/http-client.ts';
import { TEST_PASSWORD } from '../support/portal-client.ts';
import { testExportPipeline } from '../support/test-pipelines.ts';
import { viewerPagePipeline } from '../support/viewer-pipeline.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => Boolean(p),
);
const chromium = CANDIDATES.find((candidate) => existsSync(candidate));
const skip = chromium ? false : `no Chromium installed (looked at ${CANDIDATES.join(', ')}; apt-get install chromium)`;
if (skip) console.log(`# portal browser test skipped: ${skip}`);

test('the portal user story in a real browser', { skip }, async () => {
  const { chromium: playwright } = await import('playwright-core');
  const shots = process.env.PORTAL_SCREENSHOTS_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'hwr-portal-screenshots-')));
  await mkdir(shots, { recursive: true });
  const databaseUrl = await createTestDatabase();
  // The job's pages finish once the test has seen it running in the list.
  let letPagesFinish = () => {};
  const gate = new Promise<void>((resolve) => {
    letPagesFinish = resolve;
  });
  const server = await startApiServer(databaseUrl, {
    pipelines: { page: viewerPagePipeline({ stepMs: 200, gate }), export: testExportPipeline() },
  });
  after(() => server.close());
  const { runtime, baseUrl } = server;
  await createAccount(runtime.bus, 'acme', 'test');

  const browser = await playwright.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
  after(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
  const page = await context.newPage();
  const violations: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') violations.push(message.text());
  });
  page.on('pageerror', (error) => violations.push(String(error)));
  page.on('dialog', (dialog) => void dialog.accept());
  const steps: string[] = [];
  // axe-core, evaluated through the DevTools protocol (the pages' CSP forbids inline script).
  const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const accessibility = async (name: string) => {
    const found = (await page.evaluate(
      `${axeSource};\naxe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] })
        .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })))`,
    )) as Array<{ id: string; impact: string | null; help: string; nodes: string[] }>;
    const serious = found.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
    assert.deepEqual(serious, [], `${name}: no serious or critical accessibility violation`);
    return found.length;
  };
  const shot = async (name: string) => {
    const minor = await accessibility(name);
    const file = path.join(shots, `${String(steps.length + 1).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    steps.push(`${name}: ${file} (axe: no serious or critical violation, ${minor} minor or moderate)`);
    console.log(`# screenshot ${name}: ${file}`);
  };

  // 1. Invite (as `hwr users invite` does) and open the setup link.
  const invitation = await inviteUser(runtime.bus, 'acme', 'ada@example.org', baseUrl, 'test');
  await page.goto(invitation.url);
  await shot('setup');
  await page.getByLabel(/New password/).fill(TEST_PASSWORD);
  await page.getByLabel('Repeat it').fill(TEST_PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.getByText('Your password is set.').waitFor();
  await shot('password-set');

  // 2. Sign in with the keyboard alone.
  await page.goto(`${baseUrl}/`);
  assert.equal(new URL(page.url()).pathname, '/portal/sign-in');
  await page.keyboard.press('Tab');
  await page.keyboard.type('ada@example.org');
  await page.keyboard.press('Tab');
  await page.keyboard.type(TEST_PASSWORD);
  await shot('sign-in');
  await page.keyboard.press('Enter');
  await page.waitForURL(`${baseUrl}/portal/jobs`);
  await page.getByText('No jobs yet').waitFor();
  await shot('jobs-empty');

  // 3. Create a key; the copy button (progressive enhancement) copies it.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByLabel('Label').fill('scanner <b>room 2</b>');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.locator('#new-key').textContent())!.trim();
  assert.match(key, /^hwr_[\w-]{40}$/);
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);
  assert.equal(await page.locator('b').count(), 0, 'the label is text, not markup');
  await shot('key-created');

  // 4. Submit a ZIP of two pages with that key through the API; watch it finish in the jobs list.
  const form = new FormData();
  form.append('scan_zip', new Blob([new Uint8Array(await pagesZip(['1.jpg', '2.jpg']))], { type: 'application/zip' }), 'pages.zip');
  const submitted = await fetch(`${baseUrl}/v1/process-scan`, { method: 'POST', headers: { 'X-API-Key': key }, body: form });
  assert.equal(submitted.status, 202);
  const jobId = ((await submitted.json()) as { job_id: string }).job_id;
  await page.getByRole('link', { name: 'Jobs' }).click();
  const row = page.locator('tr', { has: page.locator(`a[href="/portal/jobs/${jobId}"]`) });
  // No reload: the list refreshes itself while a job runs (progressive enhancement).
  assert.equal(await row.locator('.state-done').count(), 0, 'still running when the list is first shown');
  const loads: string[] = [];
  page.on('framenavigated', (frame) => loads.push(frame.url()));
  letPagesFinish();
  await row.locator('.state-done').waitFor({ timeout: 60_000 });
  assert.deepEqual(loads, [], 'the page was not reloaded');
  assert.match((await row.textContent())!, /2 \/ 2/);
  await shot('jobs-done');

  // 5. The job page: the timeline and the download link.
  await page.locator(`a[href="/portal/jobs/${jobId}"]`).click();
  await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  await page.getByText('Raw events (JSON, for auditors)').click();
  for (const type of ['JobQueued', 'JobStarted', 'PageCompleted', 'JobSucceeded'])
    assert.ok((await page.getByRole('cell', { name: type, exact: true }).count()) >= 1, type);
  const download = page.waitForEvent('download');
  await page.getByRole('link', { name: /Download the result/ }).click();
  assert.equal((await download).suggestedFilename(), `${jobId}.zip`);
  await shot('job');

  // 5b. The page viewer: a line's text and its polygon highlight each other.
  await page.locator(`.thumbs a[href="/portal/jobs/${jobId}/pages/1"]`).click();
  await page.getByRole('heading', { name: /^Page 1/ }).waitFor();
  const text = page.locator('#text-r1l2 .line-text');
  assert.equal((await text.textContent())?.trim(), 'Dear Sir,');
  await text.hover();
  assert.match((await page.locator('#line-r1l2').getAttribute('class')) ?? '', /\bactive\b/, 'hovering the text highlights its polygon');
  // With the script a click selects the line on both sides (and edits it: the job is done; Esc leaves it as it was).
  await text.click();
  await page.keyboard.press('Escape');
  assert.match((await page.locator('#line-r1l2').getAttribute('class')) ?? '', /\bselected\b/);
  const stroke = await page.evaluate("getComputedStyle(document.getElementById('line-r1l2')).stroke");
  assert.equal(stroke, 'rgb(164, 22, 26)', 'the selected line is drawn highlighted');
  const other = await page.evaluate("getComputedStyle(document.getElementById('line-r1l1')).stroke");
  assert.notEqual(other, stroke);
  assert.equal(await page.locator('script:not([src])').count(), 0);
  assert.equal(await page.locator('.lines mark.low').count(), 1);
  const box = await page.locator('svg image').boundingBox();
  assert.ok(box && box.width > 100, 'the page image is drawn');
  await shot('viewer');
  await page.getByRole('link', { name: 'Back to the job' }).click();

  // 6. Revoke the key (the confirmation is accepted); the API refuses it at once.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByRole('button', { name: /^Revoke / }).click();
  await page.getByText('The key is revoked.').waitFor();
  await shot('key-revoked');
  const refused = await fetch(`${baseUrl}/v1/process-scan/${jobId}`, { headers: { 'X-API-Key': key } });
  assert.equal(refused.status, 401);

  // 7. Usage (the job billed), the webhook secret revealed after the password.
  await page.getByRole('link', { name: 'Usage' }).click();
  assert.ok((await page.getByRole('cell', { name: new Date().toISOString().slice(0, 7), exact: true }).count()) === 1);
  await shot('usage');
  await page.getByRole('link', { name: 'Webhook secret' }).click();
  await page.locator('form[action="/portal/settings/webhook/reveal"] input[name="password"]').fill(TEST_PASSWORD);
  await page.getByRole('button', { name: 'Reveal the secret' }).click();
  assert.match((await page.locator('#webhook-secret').textContent()) ?? '', /^[0-9a-f]{64}$/);
  await shot('webhook-secret');

  // 8. The account page, then sign out.
  await page.getByRole('link', { name: 'Account' }).click();
  await shot('account');
  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.waitForURL(`${baseUrl}/portal/sign-in`);

  assert.deepEqual(
    violations.filter((text) => /Content Security Policy|Refused to/i.test(text)),
    [],
    'no CSP violation',
  );
  assert.deepEqual(violations, [], 'no console error');
  console.log(`# user story steps, as run:\n${steps.map((step) => `#   ${step}`).join('\n')}`);
});
