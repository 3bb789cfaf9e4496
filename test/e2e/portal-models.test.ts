// Models in the portal (docs/portal.md, "Models") and the account's default model over the API
// (docs/models.md): in a real headless Chromium (Debian's, driven by playwright-core), a real
// ground-truth ZIP (an eScriptorium ALTO export) uploaded through the form and a Transkribus
// export's files zipped in the browser, each seen queued; the trainer's commands run on the bus
// (as the trainer role runs them) and seen on the model's page without a reload (progress, the
// chart of validation CER per epoch, the figures before → after); a model made the default and a
// submission without `model` recording it; the default retired and the standard model back.
// Besides, over plain HTTP: GET/PUT /v1/account/default-model (answers checked against the
// OpenAPI document), refusals shown on the forms after the redirect, another account's model a
// 404, projections verify. Screenshots of the pages are kept (their paths printed). The browser test skips, saying why, only when no Chromium is installed.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { accountStreamId, jobStreamId } from '../../domain/events.ts';
import type { ModelCommand } from '../../domain/model-decide.ts';
import { trainedModelPrefix } from '../../src/blobs/blob-keys.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { createTestDatabase } from '../support/database.ts';
import { type Auth, createCredentials, FIXTURES, makeZip, pagesZip, startApiServer } from '../support/http-client.ts';
import { csrfTokenOf, portalUser, TEST_PASSWORD } from '../support/portal-client.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => Boolean(p),
);
const chromium = CANDIDATES.find((candidate) => existsSync(candidate));
const skip = chromium ? false : `no Chromium installed (looked at ${CANDIDATES.join(', ')}; apt-get install chromium)`;
if (skip) console.log(`# portal models browser test skipped: ${skip}`);

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl, {
  env: { TRAINER: 'on' },
  pipelines: { page: testPagePipeline({ worker: 'w1' }), export: testExportPipeline() },
});
after(() => server.close());
const { runtime, baseUrl, client } = server;

const fixture = (file: string) => readFile(path.join(FIXTURES, file));
// An eScriptorium ALTO export of one page (25 lines), as test/e2e/api-models.test.ts uploads it.
const escriptorium = await makeZip([
  { name: 'f207.jpeg', data: await fixture('export/cremma19_zola_f207.jpg') },
  { name: 'f207.xml', data: await fixture('export/cremma19_zola_f207.xml') },
]);

/** What the trainer role does, one command at a time (domain/model-decide.ts). */
async function runOnBus(modelId: string, commands: ModelCommand[]): Promise<void> {
  for (const command of commands) await runtime.bus.model(modelId, command, { actor: 'trainer' });
}
const epoch = (n: number, validationCer: number): ModelCommand => ({
  type: 'RecordModelProgress',
  epoch: n,
  trainLoss: 4 / n,
  validationCer,
  now: new Date(),
});
const complete = (modelId: string, cerBefore: number, cerAfter: number): ModelCommand => ({
  type: 'CompleteModelTraining',
  cerBefore,
  cerAfter,
  werBefore: 0.4,
  werAfter: 0.3,
  linesTrain: 20,
  linesValidation: 5,
  trainingMinutes: 3.5,
  modelKey: trainedModelPrefix(modelId),
  now: new Date(),
});

function trainForm(zip: Buffer, fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('training_zip', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'truth.zip');
  return form;
}

async function readyModel(auth: Auth, label: string): Promise<string> {
  const queued = await client.request('POST', '/v1/models', { auth, body: trainForm(escriptorium, { label }) });
  assert.equal(queued.status, 202, JSON.stringify(queued.body));
  const modelId = queued.body.model_id as string;
  await runOnBus(modelId, [{ type: 'StartModelTraining', now: new Date() }, epoch(1, 0.2), complete(modelId, 0.2, 0.1)]);
  return modelId;
}

async function jobModel(jobId: string): Promise<string | undefined> {
  const [queued] = await readStream(runtime.db.pool, jobStreamId(jobId));
  return (queued.data as { options: { model?: string } }).options.model;
}

describe('the account’s default model over the API', () => {
  test('GET and PUT /v1/account/default-model; a submission without model reads with it, `default` with the standard one; a retired default falls back', async () => {
    const owner = await createCredentials(runtime, 'api-default');
    const auth: Auth = { key: owner.key };
    const other: Auth = { key: (await createCredentials(runtime, 'api-default-other')).key };
    const initial = await client.get('/v1/account/default-model', auth);
    assert.equal(initial.status, 200);
    assert.deepEqual(initial.body, { model: 'default', model_state: null, effective_model: 'default', chosen_at: null });

    const modelId = await readyModel(auth, 'Zola');
    const put = (body: unknown, key: Auth = auth) =>
      client.request('PUT', '/v1/account/default-model', {
        auth: key,
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' },
      });
    const refusals: Array<[unknown, Auth, string]> = [
      [{}, auth, 'invalid_default_model_request'],
      [{ model: 'default', extra: 1 }, auth, 'invalid_default_model_request'],
      [[modelId], auth, 'invalid_default_model_request'],
      [{ model: 'mine' }, auth, 'invalid_model'],
      [{ model: modelId }, other, 'invalid_model'],
    ];
    for (const [body, key, code] of refusals) {
      const refused = await put(body, key);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.body.code, code, JSON.stringify(body));
    }
    const queued = await client.request('POST', '/v1/models', { auth, body: trainForm(escriptorium) });
    assert.equal((await put({ model: queued.body.model_id })).body.code, 'model_not_ready');

    const chosen = await put({ model: modelId.toUpperCase() });
    assert.equal(chosen.status, 200, JSON.stringify(chosen.body));
    assert.equal(chosen.body.model, modelId);
    assert.equal(chosen.body.model_state, 'ready');
    assert.equal(chosen.body.effective_model, modelId);
    assert.ok(Date.parse(chosen.body.chosen_at) > 0);
    assert.deepEqual((await client.get('/v1/account/default-model', auth)).body, chosen.body);
    assert.equal((await put({ model: modelId })).status, 200, 'the same choice again');
    const choices = (await readStream(runtime.db.pool, accountStreamId(owner.accountId))).filter(
      (event) => event.type === 'AccountDefaultModelChosen',
    );
    assert.deepEqual(
      choices.map((event) => [event.data, event.metadata.actor]),
      [[{ model: modelId, chosenAt: chosen.body.chosen_at }, owner.keyId]],
      'one event: the same choice again records nothing',
    );

    const zip = await pagesZip(['1.jpg']);
    const unnamed = await client.submit(zip, auth);
    assert.equal(unnamed.status, 202, JSON.stringify(unnamed.body));
    assert.equal(await jobModel(unnamed.body.job_id), modelId, 'no model named: the account’s default');
    const standard = await client.submit(zip, auth, { model: 'default' });
    assert.equal(await jobModel(standard.body.job_id), undefined, '`default`: the standard model');
    assert.equal(await jobModel((await client.submit(zip, other)).body.job_id), undefined, 'another account’s default is its own');

    const retired = await client.request('DELETE', `/v1/models/${modelId}`, { auth });
    assert.equal(retired.body.state, 'retired');
    const after = await client.get('/v1/account/default-model', auth);
    assert.deepEqual(
      [after.body.model, after.body.model_state, after.body.effective_model],
      [modelId, 'retired', 'default'],
      'the choice stays recorded; submissions read with the standard model',
    );
    assert.equal(await jobModel((await client.submit(zip, auth)).body.job_id), undefined);
    const back = await put({ model: 'default' });
    assert.deepEqual([back.body.model, back.body.model_state, back.body.effective_model], ['default', null, 'default']);
  });
});

describe('the Models pages over HTTP', () => {
  test('a refused upload is shown on the form with the API’s message and status; another account’s model is not found; forms need their token', async () => {
    const owner = await createCredentials(runtime, 'portal-refusals');
    const stranger = await createCredentials(runtime, 'portal-stranger');
    const user = await portalUser(runtime, baseUrl, 'portal-refusals', 'refused@example.org');
    const form = await user.get('/portal/models/new');
    assert.equal(form.status, 200);
    const csrf = /action="\/portal\/models\/new\?_csrf=([^"]+)"/.exec(form.text)![1];
    const post = (body: FormData, token = csrf) =>
      fetch(`${baseUrl}/portal/models/new?_csrf=${encodeURIComponent(token)}`, {
        method: 'POST',
        body,
        redirect: 'manual',
        headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
      });
    const refused = await post(trainForm(await pagesZip(['1.jpg', '2.jpg'])));
    assert.equal(refused.status, 303);
    assert.equal(refused.headers.get('location'), '/portal/models/new');
    const shown = await user.get('/portal/models/new');
    assert.equal(shown.status, 400);
    const viaApi = await client.request('POST', '/v1/models', {
      auth: { key: owner.key },
      body: trainForm(await pagesZip(['1.jpg', '2.jpg'])),
    });
    assert.equal(viaApi.body.code, 'page_without_layout');
    assert.ok(shown.text.includes('role="alert"'));
    assert.match(shown.text, /page_without_layout|has no PageXML|layout/i);
    assert.equal((await user.get('/portal/models/new')).status, 200, 'the refusal is shown once');
    assert.equal((await post(trainForm(escriptorium), 'forged')).status, 403);
    assert.equal(
      (await runtime.db.pool.query('select count(*)::int as n from models where account_id = $1', [owner.accountId])).rows[0].n,
      0,
    );

    const foreign = await readyModel({ key: stranger.key }, 'Not yours');
    assert.equal((await user.get(`/portal/models/${foreign}`)).status, 404);
    assert.equal((await user.get('/portal/models/not-a-model')).status, 404);
    const models = await user.get('/portal/models');
    assert.equal(models.text.includes(foreign), false);
    const token = csrfTokenOf(models.text, '/portal/models/default');
    const chooseForeign = await user.post('/portal/models/default', { _csrf: token, model: foreign });
    assert.equal(chooseForeign.status, 303);
    const after = await user.get('/portal/models');
    assert.equal(after.status, 400);
    assert.match(after.text, /there is no model/);
    assert.equal((await user.post(`/portal/models/${foreign}/retire`, { _csrf: token })).status, 404);
    assert.equal((await user.post('/portal/models/default', { _csrf: 'forged', model: 'default' })).status, 403);
  });
});

test('Models in a real browser: upload, watch the training, the figures, the default model, retire', { skip }, async () => {
  const { chromium: playwright } = await import('playwright-core');
  const acme = await createCredentials(runtime, 'acme');
  await portalUser(runtime, baseUrl, 'acme', 'ada@example.org');
  // Screenshots of each page go to PORTAL_SCREENSHOTS_DIR, else a temporary directory; their paths are printed.
  const shots = process.env.PORTAL_SCREENSHOTS_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'hwr-portal-models-')));
  await mkdir(shots, { recursive: true });
  const browser = await playwright.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
  after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(String(error)));
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.accept();
  });
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
    const file = path.join(shots, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`# screenshot ${name}: ${file}`);
  };

  // Sign in; Models from the navigation: none yet.
  await page.goto(`${baseUrl}/portal/sign-in`);
  await page.getByLabel('Email').fill('ada@example.org');
  await page.getByLabel('Password').fill(TEST_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${baseUrl}/portal/jobs`);
  await page.getByRole('link', { name: 'Models', exact: true }).click();
  await page.getByText('No models yet').waitFor();
  await accessible('models-empty');

  // Upload a ground-truth ZIP: the model's page, queued, says what was taken in.
  await page.getByRole('link', { name: 'Train a model' }).click();
  await page.getByRole('heading', { name: 'Train a model' }).waitFor();
  await accessible('train-form');
  await page.getByLabel(/^ZIP of page images with their PageXML or ALTO files/).setInputFiles({
    name: 'zola.zip',
    mimeType: 'application/zip',
    buffer: escriptorium,
  });
  await page.getByLabel('Name (optional)').fill('Zola <i>drafts</i>');
  await page.getByRole('button', { name: 'Upload and train' }).click();
  await page.waitForURL(/\/portal\/models\/[0-9a-f-]{36}$/);
  const zola = /([0-9a-f-]{36})$/.exec(page.url())![1];
  await page.getByText('Your ground truth is in: 25 lines on 1 page. The training is queued.').waitFor();
  await page.getByRole('heading', { name: 'Zola <i>drafts</i>' }).waitFor();
  assert.equal(await page.locator('i').count(), 0, 'the label is text, not markup');
  assert.equal((await page.locator('[data-live-model] .state-queued').textContent())?.trim(), 'queued');
  await accessible('model-queued');

  // The trainer starts and reports epochs: the page shows them without a reload.
  const loads: string[] = [];
  page.on('framenavigated', (frame) => loads.push(frame.url()));
  await runOnBus(zola, [{ type: 'StartModelTraining', now: new Date() }, epoch(1, 0.31)]);
  await page.locator('[data-live-model] .state-training').waitFor({ timeout: 30_000 });
  await page.locator('figure.chart circle.cer-point').first().waitFor({ timeout: 30_000 });
  await runOnBus(zola, [epoch(2, 0.22), epoch(3, 0.18), epoch(4, 0.19)]);
  await waitUntil('the chart shows four epochs', async () => (await page.locator('figure.chart circle.cer-point').count()) === 4, {
    timeoutMs: 30_000,
  });
  assert.deepEqual(loads, [], 'the page refreshed itself, not reloaded');
  const chart = page.getByRole('img', { name: 'Validation CER per epoch' });
  assert.match((await chart.getAttribute('aria-labelledby')) ?? '', /cer-chart-desc/);
  assert.match(
    (await page.locator('#cer-chart-desc').textContent()) ?? '',
    /4 epochs: validation CER 31\.0 % after epoch 1, 19\.0 % after epoch 4, lowest 18\.0 % \(epoch 3\)/,
  );
  assert.equal(await page.locator('figure.chart circle.cer-point.best').count(), 1);
  assert.equal((await page.locator('figure.chart circle.cer-point.best title').textContent())?.trim(), 'Epoch 3: 18.0 %');
  await accessible('model-training');

  // Trained and measured: the figures before → after, ready.
  await runOnBus(zola, [complete(zola, 0.2, 0.1)]);
  await page.getByRole('heading', { name: 'Before and after' }).waitFor({ timeout: 30_000 });
  assert.equal((await page.locator('[data-live-model] .state-ready').first().textContent())?.trim(), 'ready');
  assert.equal(
    (
      await page
        .getByRole('row', { name: /Character error rate/ })
        .getByRole('cell')
        .textContent()
    )
      ?.replace(/\s+/g, ' ')
      .trim(),
    '20.0 % → 10.0 % (−50 %)',
  );
  assert.match((await page.getByRole('row', { name: /Word error rate/ }).textContent()) ?? '', /40\.0 % → 30\.0 % \(−25 %\)/);
  await accessible('model-ready');

  // Make it the account's default; a job submitted from the portal without naming a model records it.
  await page.getByRole('button', { name: 'Use for new jobs by default' }).click();
  await page.getByText('New jobs are read with Zola <i>drafts</i> from now on.').waitFor();
  assert.equal(dialogs.at(-1), 'Read new jobs that name no model with this model?');
  assert.equal(new URL(page.url()).pathname, `/portal/models/${zola}`);
  await page.locator('.badge', { hasText: 'default' }).waitFor();
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await page.getByRole('link', { name: 'New job' }).click();
  await page
    .getByLabel(/^ZIP of page images/)
    .setInputFiles({ name: 'pages.zip', mimeType: 'application/zip', buffer: await pagesZip(['1.jpg']) });
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.waitForURL(/\/portal\/jobs\/[0-9a-f-]{36}$/);
  const jobId = /([0-9a-f-]{36})$/.exec(page.url())![1];
  assert.equal(await jobModel(jobId), zola, 'the job records the account’s default model');
  const viaApi = await client.submit(await pagesZip(['1.jpg']), { key: acme.key });
  assert.equal(await jobModel(viaApi.body.job_id), zola, 'so does a submission over the API that names none');

  // A second model, from a Transkribus export's files zipped in the browser; it reads no better.
  await page.getByRole('link', { name: 'Models', exact: true }).click();
  await page.getByRole('link', { name: 'Train a model' }).click();
  const exportDir = path.join(FIXTURES, 'models');
  await page
    .getByLabel('Files', { exact: true })
    .setInputFiles([
      path.join(exportDir, 'hooker_JDH_2_3_6_79_001.jpg'),
      path.join(exportDir, 'hooker_JDH_2_3_6_79_001.xml'),
      path.join(FIXTURES, 'correction', 'hooker_JDH_2_16_144_002.jpg'),
      path.join(exportDir, 'hooker_JDH_2_16_144_002.xml'),
    ]);
  await page.getByText(/^2 images zipped with 2 layout files \([\d.]+ [kM]B\) as pages\.zip\. Submit to upload it\.$/).waitFor();
  await page.getByLabel('Name (optional)').fill('Hooker');
  await page.getByLabel('Train from').selectOption({ label: 'Zola <i>drafts</i>' });
  await page.getByRole('button', { name: 'Upload and train' }).click();
  await page.waitForURL(/\/portal\/models\/[0-9a-f-]{36}$/);
  const hooker = /([0-9a-f-]{36})$/.exec(page.url())![1];
  await page.getByText('Your ground truth is in: 34 lines on 2 pages. The training is queued.').waitFor();
  assert.equal(await page.getByRole('link', { name: 'Zola <i>drafts</i>' }).count(), 1, 'trained from the first model');
  await runOnBus(hooker, [{ type: 'StartModelTraining', now: new Date() }, epoch(1, 0.4), complete(hooker, 0.2, 0.21)]);
  await page.getByRole('heading', { name: 'Before and after' }).waitFor({ timeout: 30_000 });
  await page.getByText('Not better than its base model on the held-out lines').waitFor();

  // The list: both models, newest first, with their figures, the default marked, `not better` said.
  await page.getByRole('link', { name: 'All models' }).click();
  const rows = page.locator('table[data-live] tbody tr');
  assert.equal(await rows.count(), 2);
  assert.match(
    (await rows.nth(0).textContent()) ?? '',
    /Hooker[\s\S]*ready[\s\S]*not better[\s\S]*Zola <i>drafts<\/i>[\s\S]*34[\s\S]*20\.0 % → 21\.0 % \(\+5 %\)/,
  );
  assert.match(
    (await rows.nth(1).textContent()) ?? '',
    /Zola <i>drafts<\/i>\s*default[\s\S]*ready[\s\S]*Standard model[\s\S]*25[\s\S]*20\.0 % → 10\.0 % \(−50 %\)/,
  );
  await accessible('models-list');

  // Retire the default model: the standard model reads new jobs again, and the page says why.
  await rows.nth(1).getByRole('link', { name: 'Zola <i>drafts</i>' }).click();
  await page.getByRole('button', { name: 'Retire the model' }).click();
  await page.getByText('The model is retired: new jobs can no longer read with it.').waitFor();
  assert.equal(dialogs.at(-1), 'Retire this model? New jobs can no longer read with it.');
  assert.equal((await page.locator('[data-live-model] .state-retired').textContent())?.trim(), 'retired');
  assert.equal(await page.getByRole('button', { name: 'Retire the model' }).count(), 0);
  await page.getByRole('link', { name: 'All models' }).click();
  await page
    .getByText(/Jobs that do not name a model are read with Standard model \(Zola <i>drafts<\/i>, chosen before, is retired\)\./)
    .waitFor();
  assert.equal(await jobModel((await client.submit(await pagesZip(['1.jpg']), { key: acme.key })).body.job_id), undefined);

  // Choose the default from the list: only ready models are offered.
  const choice = page.getByLabel('Read new jobs with');
  assert.deepEqual(await choice.locator('option').allTextContents(), ['Standard model', 'Hooker (not better than its base)']);
  await choice.selectOption({ label: 'Hooker (not better than its base)' });
  await page.getByRole('button', { name: 'Save the default' }).click();
  await page.getByText('New jobs are read with Hooker from now on.').waitFor();
  assert.equal(await jobModel((await client.submit(await pagesZip(['1.jpg']), { key: acme.key })).body.job_id), hooker);
  await accessible('models-default-chosen');

  // A new job may name its model: the account's default (Hooker now), the standard one, or a ready model.
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await page.getByRole('link', { name: 'New job' }).click();
  const model = page.locator('select[name="model"]');
  await model.waitFor();
  assert.deepEqual(await model.locator('option').allTextContents(), [
    'The account’s default: Hooker',
    'Standard model',
    'Hooker (not better than its base)',
  ]);
  await accessible('new-job-models');
  await model.selectOption({ label: 'Standard model' });
  await page
    .getByLabel(/^ZIP of page images/)
    .setInputFiles({ name: 'pages.zip', mimeType: 'application/zip', buffer: await pagesZip(['1.jpg']) });
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.waitForURL(/\/portal\/jobs\/[0-9a-f-]{36}$/);
  assert.equal(await jobModel(/([0-9a-f-]{36})$/.exec(page.url())![1]), undefined, 'the standard model, not the default Hooker');

  assert.deepEqual(problems, [], 'no console error, no CSP violation');
});

test('projections verify after all of it', async () => {
  assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
});
