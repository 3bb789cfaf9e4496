// Issue 42's portal findings in a real browser (Debian's chromium driven by playwright-core, as
// portal-browser.test.ts): a deep link kept through sign-in; a reload after a form (Post/Redirect/
// Get) makes no second key and shows it no more; a folder of images, or several image files,
// zipped in the browser as `hwr submit` zips them (hidden files and non-images left out) and
// submitted through the form; a refused upload shown on the form, gone on reload. No console error,
// no serious or critical accessibility violation on the new-job page. Skips only without Chromium.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import sharp from 'sharp';
import { accountStreamId, jobStreamId } from '../../domain/events.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { createAccount } from '../../src/use-cases/accounts.ts';
import { inviteUser } from '../../src/use-cases/users.ts';
import { createTestDatabase } from '../support/database.ts';
import { startApiServer, ZIP_FIXTURES } from '../support/http-client.ts';
import { PortalClient, TEST_PASSWORD } from '../support/portal-client.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => Boolean(p),
);
const chromium = CANDIDATES.find((candidate) => existsSync(candidate));
const skip = chromium ? false : `no Chromium installed (looked at ${CANDIDATES.join(', ')}; apt-get install chromium)`;
if (skip) console.log(`# portal browser findings test skipped: ${skip}`);

test('deep link, reload after a form, folder and image uploads zipped in the browser, a refusal on the form', { skip }, async () => {
  const { chromium: playwright } = await import('playwright-core');
  const server = await startApiServer(await createTestDatabase());
  after(() => server.close());
  const { runtime, baseUrl } = server;
  const account = await createAccount(runtime.bus, 'acme', 'test');
  // The user sets a password through the setup link (over HTTP, as portal-browser.test.ts does in the browser).
  const invitation = await inviteUser(runtime.bus, 'acme', 'ada@example.org', baseUrl, 'test');
  const setup = new PortalClient(baseUrl);
  const token = new URL(invitation.url).searchParams.get('token')!;
  await setup.submit(invitation.url.slice(baseUrl.length), '/portal/setup', { token, password: TEST_PASSWORD, password2: TEST_PASSWORD });

  const browser = await playwright.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
  after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

  // 1. A deep link while signed out: sign-in, then the page asked for.
  await page.goto(`${baseUrl}/portal/jobs/new`);
  assert.equal(new URL(page.url()).pathname, '/portal/sign-in');
  assert.equal(new URL(page.url()).searchParams.get('next'), '/portal/jobs/new');
  await page.getByLabel('Email').fill('ada@example.org');
  await page.getByLabel('Password').fill(TEST_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${baseUrl}/portal/jobs/new`);

  // 2. The new-job page offers images and folders (the script shows them), accessibly.
  await page.getByRole('group', { name: /page images/i }).waitFor();
  const found = (await page.evaluate(
    `${axeSource};\naxe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] })
      .then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.help))`,
  )) as string[];
  assert.deepEqual(found, [], 'no serious or critical accessibility violation on the new-job page');

  // 3. A folder: its images in natural order of their paths below it; hidden files and non-images left out.
  const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-portal-folder-'));
  const folder = path.join(work, 'letters');
  await mkdir(path.join(folder, 'b'), { recursive: true });
  const line = (n: number) => path.join(ZIP_FIXTURES, 'images', `line-${n}.jpg`);
  await copyFile(line(1), path.join(folder, '10.jpg'));
  await copyFile(line(2), path.join(folder, '2.jpg'));
  await copyFile(path.join(ZIP_FIXTURES, 'images', 'line-6.png'), path.join(folder, 'b', '1.png'));
  await copyFile(line(3), path.join(folder, '.hidden.jpg'));
  await writeFile(path.join(folder, 'notes.txt'), 'not a page');
  await page.locator('input[data-pick="folder"]').setInputFiles(folder);
  await page.getByText(/3 images zipped/).waitFor();
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.waitForURL(/\/portal\/jobs\/[0-9a-f-]{36}$/);
  const folderJob = new URL(page.url()).pathname.split('/').at(-1)!;
  const pagesOf = async (jobId: string) =>
    ((await readStream(runtime.db.pool, jobStreamId(jobId)))[0].data as { pages: Array<{ name: string }> }).pages.map((p) => p.name);
  assert.deepEqual(await pagesOf(folderJob), ['2.jpg', '10.jpg', 'b/1.png']);

  // 4. Several image files (a layout file beside its image goes with it).
  await page.goto(`${baseUrl}/portal/jobs/new`);
  const files = path.join(work, 'files');
  await mkdir(files);
  await copyFile(line(4), path.join(files, 'p2.jpg'));
  await copyFile(line(5), path.join(files, 'p1.jpg'));
  await page.locator('input[data-pick="files"]').setInputFiles([path.join(files, 'p2.jpg'), path.join(files, 'p1.jpg')]);
  await page.getByText(/2 images zipped/).waitFor();
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.waitForURL(/\/portal\/jobs\/[0-9a-f-]{36}$/);
  assert.deepEqual(await pagesOf(new URL(page.url()).pathname.split('/').at(-1)!), ['p1.jpg', 'p2.jpg']);

  // 5. A refused upload (a 1×1 image): the form after the redirect says why; a reload shows it no more.
  await page.goto(`${baseUrl}/portal/jobs/new`);
  const tiny = path.join(work, 'tiny.png');
  await writeFile(
    tiny,
    await sharp({ create: { width: 1, height: 1, channels: 3, background: '#fff' } })
      .png()
      .toBuffer(),
  );
  await page.locator('input[data-pick="files"]').setInputFiles([tiny]);
  await page.getByText(/1 image zipped/).waitFor();
  const answer = page.waitForResponse((response) => response.url() === `${baseUrl}/portal/jobs/new`);
  await page.getByRole('button', { name: 'Submit' }).click();
  assert.equal((await answer).status(), 400);
  await page.getByText(/a page image needs at least 16 pixels a side/).waitFor();
  await page.reload();
  assert.equal(await page.getByText(/a page image needs at least 16 pixels a side/).count(), 0);

  // 6. A new key, then a reload of the page the form led to: no second key, the key not shown again.
  await page.goto(`${baseUrl}/portal/settings/keys`);
  await page.getByLabel('Label').fill('reloaded');
  await page.getByRole('button', { name: 'Create key' }).click();
  assert.match((await page.locator('#new-key').textContent()) ?? '', /^hwr_[\w-]{40}$/);
  await page.reload();
  assert.equal(await page.locator('#new-key').count(), 0, 'shown once');
  const created = (await readStream(runtime.db.pool, accountStreamId(account.accountId))).filter((e) => e.type === 'ApiKeyCreated');
  assert.equal(created.length, 1, 'a reload made no second key');

  // Chromium logs the refusal page's own status (step 5: the form after the redirect answers 400, as
  // the refusal's status); nothing else.
  assert.deepEqual(
    errors.filter((text) => !/^Failed to load resource: the server responded with a status of 400 \(Bad Request\)$/.test(text)),
    [],
    'no console error',
  );
  assert.equal(errors.length, 1, errors.join('\n'));
});
