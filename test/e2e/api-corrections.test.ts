// Corrections over real HTTP (docs/corrections.md, issue 42 items 3-6), every answer checked
// against the OpenAPI document: real jobs run (the page pipeline answers with real ground-truth
// pages, the real export pipeline writes the archive), a page's lines read, corrected, read
// again; every refusal code; another account's 404; the history and the timeline name the key's
// label; the archive re-exported with the corrections (XSD-valid, PageXML/ALTO/text/PDF text
// layer); a training from the job's corrected and checked pages; projections verify.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { PagePipeline } from '../../src/pipeline/pipeline.ts';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { readGroundTruth } from '../../src/intake/ground-truth.ts';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { createTestDatabase } from '../support/database.ts';
import { type Auth, createCredentials, FIXTURES, makeZip, waitForState } from '../support/http-client.ts';
import { startApiServer } from '../support/http-client.ts';
import { pageResultFromGroundTruth } from '../support/page-result-from-ground-truth.ts';

const PAGES: Record<string, { imagePath: string; xmlPath: string }> = {
  'f207.jpg': {
    imagePath: path.join(FIXTURES, 'export/cremma19_zola_f207.jpg'),
    xmlPath: path.join(FIXTURES, 'export/cremma19_zola_f207.xml'),
  },
  'dracula.png': {
    imagePath: path.join(FIXTURES, 'export/fondue_en_print_dracula_page_51.png'),
    xmlPath: path.join(FIXTURES, 'export/fondue_en_print_dracula_page_51.xml'),
  },
  'hooker.jpg': {
    imagePath: path.join(FIXTURES, 'models/hooker_JDH_2_3_6_79_001.jpg'),
    xmlPath: path.join(FIXTURES, 'models/hooker_JDH_2_3_6_79_001.xml'),
  },
};

let release: () => void = () => {};
const held = new Promise<void>((resolve) => {
  release = resolve;
});

// Real pages as the recognizer would answer them (their ground truth's geometry and text); `fail.jpg` fails, `held.jpg` waits.
const pagePipeline: PagePipeline = {
  async processPage(task, context) {
    for (const step of ['layout', 'recognition'] as const) await context.enterStep(step);
    const name = path.posix.basename(task.page.name);
    if (name === 'fail.jpg') throw new PipelineError('image_unreadable', 'not a page');
    if (name === 'held.jpg') await held;
    const source = PAGES[name] ?? PAGES['hooker.jpg'];
    return pageResultFromGroundTruth({ ...source, name: task.page.name, pageNumber: task.page.pageNumber });
  },
};

const server = await startApiServer(await createTestDatabase(), {
  env: { TRAINER: 'on' },
  pipelines: { page: pagePipeline, export: createExportPipeline() },
});
after(async () => {
  release();
  await server.close();
});
const { client, runtime } = server;
const owner = await createCredentials(runtime, 'corrections-owner');
const auth: Auth = { key: owner.key };
const stranger: Auth = { key: (await createCredentials(runtime, 'corrections-stranger')).key };

const image = (name: string) => readFile(PAGES[name].imagePath);
const zip = await makeZip([
  { name: 'p1/f207.jpg', data: await image('f207.jpg') },
  { name: 'p2/dracula.png', data: await image('dracula.png') },
]);

async function runJob(archive: Buffer, states = ['done']): Promise<string> {
  const submitted = await client.submit(archive, auth, { pipeline_steps: 'layout,recognition,export' });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const status = await waitForState(client, auth, submitted.body.job_id, states, 60_000);
  assert.ok(states.includes(status.state), JSON.stringify(status));
  return submitted.body.job_id;
}

function put(jobId: string, page: number | string, body: unknown, key: Auth = auth, contentType = 'application/json') {
  return client.request('PUT', `/v1/process-scan/${jobId}/pages/${page}/text`, {
    auth: key,
    headers: { 'Content-Type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function trainFrom(jobId: string, body: unknown, key: Auth = auth) {
  return client.request('POST', `/v1/process-scan/${jobId}/models`, {
    auth: key,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function waitForReexport(jobId: string, version: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const events = (await client.get(`/v1/process-scan/${jobId}/events`, auth)).body.events;
    if (events.some((event: any) => event.type === 'ResultReexported' && event.data.correctionVersion === version)) return;
    assert.ok(Date.now() < deadline, `no ResultReexported of correction ${version}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const jobId = await runJob(zip);

describe('a done job’s page', () => {
  test('GET …/pages/1: every line with its id, geometry, machine text and confidence; version 0', async () => {
    const response = await client.get(`/v1/process-scan/${jobId}/pages/1`, auth);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const page = response.body;
    assert.equal(page.page, 1);
    assert.equal(page.version, 0);
    assert.equal(page.corrected_lines, 0);
    assert.ok(page.lines.length >= 20, `${page.lines.length} lines`);
    for (const line of page.lines) {
      assert.equal(line.corrected_text, null);
      assert.equal(line.text, line.machine_text);
      assert.ok(line.polygon.length >= 3);
    }
    assert.equal(page.text, page.lines.map((line: any) => line.text).join('\n'));
  });
});

describe('a correction', () => {
  test('saved, read again, in the history with the key’s label, and the archive re-exported with it', async () => {
    const before = (await client.get(`/v1/process-scan/${jobId}/pages/1`, auth)).body;
    const [first, second] = before.lines;
    const saved = await put(jobId, 1, {
      lines: [
        { id: first.id, text: 'Corrigé par une personne' },
        { id: second.id, text: 'deuxième ligne revue' },
      ],
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.equal(saved.body.version, 1);
    assert.equal(saved.body.corrected_lines, 2);
    assert.ok(saved.body.text.startsWith('Corrigé par une personne\ndeuxième ligne revue\n'));

    // Reload: the same, the machine's reading kept beside it.
    const reloaded = (await client.get(`/v1/process-scan/${jobId}/pages/1`, auth)).body;
    assert.equal(reloaded.version, 1);
    assert.equal(reloaded.lines[0].corrected_text, 'Corrigé par une personne');
    assert.equal(reloaded.lines[0].machine_text, first.machine_text);
    assert.equal(reloaded.lines[2].corrected_text, null);

    // The same text again changes nothing: no event, the version stays.
    const again = await put(jobId, 1, { lines: [{ id: first.id, text: 'Corrigé par une personne' }] });
    assert.equal(again.status, 200);
    assert.equal(again.body.version, 1);

    const events = (await client.get(`/v1/process-scan/${jobId}/events`, auth)).body.events;
    const corrected = events.filter((event: any) => event.type === 'PageTextCorrected');
    assert.equal(corrected.length, 1);
    assert.deepEqual(corrected[0].data.actor, { kind: 'api_key', keyId: owner.keyId, label: 'test key' });
    assert.deepEqual(corrected[0].data.lines[0], { id: first.id, before: first.machine_text, after: 'Corrigé par une personne' });

    const timeline = await client.get(`/v1/process-scan/${jobId}/timeline`, auth);
    assert.equal(timeline.status, 200);
    const submitted = timeline.body.entries.find((entry: any) => entry.type === 'JobQueued');
    assert.deepEqual(submitted.actor, { kind: 'api_key', label: 'test key' });
    const correction = timeline.body.entries.find((entry: any) => entry.type === 'PageTextCorrected');
    assert.deepEqual(correction.actor, { kind: 'api_key', label: 'test key' });
    assert.equal(correction.summary, 'page 1: 2 lines corrected');
    assert.ok(!JSON.stringify(timeline.body).includes(owner.keyId), 'the timeline names no key id');

    await waitForReexport(jobId, 1);
    const download = await client.get(`/v1/process-scan/${jobId}/result`, auth);
    assert.equal(download.status, 200);
    const archive = await checkResultArchive(download.body as Buffer);
    assert.deepEqual(archive.manifest.corrections, { version: 1, corrected_lines: 2 });
    assert.equal(archive.manifest.pages[0].corrected_lines, 2);
    assert.equal(archive.manifest.pages[0].files.page, 'page/0001_f207.xml', 'the same file names');
    const pageXml = archive.files.get('page/0001_f207.xml')!.toString('utf8');
    assert.match(pageXml, /custom="correction \{source:manual;\}"/);
    assert.match(pageXml, /<TextEquiv index="0" comments="corrected">\s*<Unicode>Corrigé par une personne<\/Unicode>/);
    assert.ok(pageXml.includes(`<Unicode>${escapeXml(first.machine_text)}</Unicode>`), 'the machine reading stays in PageXML');
    const alto = archive.files.get('alto/0001_f207.xml')!.toString('utf8');
    assert.match(alto, /CS="true"/);
    assert.match(alto, /CONTENT="Corrigé"/);
    assert.match(archive.files.get('text/0001_f207.txt')!.toString('utf8'), /^Corrigé par une personne\ndeuxième ligne revue\n/);
    assert.ok(archive.pages[0].pdfText?.replace(/\s+/g, '').includes('Corrigéparunepersonne'), 'the PDF text layer has the correction');
    // Billing did not change: one billed job, its pages.
    const billed = await runtime.db.pool.query('select pages from billing where job_id = $1', [jobId]);
    assert.deepEqual(billed.rows, [{ pages: 2 }]);
  });
});

describe('refusals', () => {
  const lineId = async () => (await client.get(`/v1/process-scan/${jobId}/pages/2`, auth)).body.lines[0].id as string;

  const cases: Array<[string, () => Promise<{ status: number; body: any }>, number, string]> = [
    ['a body that is not JSON', () => put(jobId, 2, 'not json'), 400, 'invalid_correction_body'],
    ['an empty body', () => put(jobId, 2, ''), 400, 'invalid_correction_body'],
    ['no lines', () => put(jobId, 2, { lines: [] }), 400, 'invalid_correction_body'],
    [
      'an unknown field',
      async () => put(jobId, 2, { lines: [{ id: await lineId(), text: 'x' }], page: 2 }),
      400,
      'invalid_correction_body',
    ],
    [
      'a line twice',
      async () =>
        put(jobId, 2, {
          lines: [
            { id: await lineId(), text: 'x' },
            { id: await lineId(), text: 'y' },
          ],
        }),
      400,
      'invalid_correction_body',
    ],
    [
      'a text that is not a string',
      async () => put(jobId, 2, { lines: [{ id: await lineId(), text: 3 }] }),
      400,
      'invalid_correction_body',
    ],
    ['not application/json', async () => put(jobId, 2, { lines: [] }, auth, 'text/plain'), 415, 'unsupported_media_type'],
    ['an unknown line', () => put(jobId, 2, { lines: [{ id: 'no_such_line', text: 'x' }] }), 404, 'unknown_line'],
    ['a text too long', async () => put(jobId, 2, { lines: [{ id: await lineId(), text: 'a'.repeat(2001) }] }), 400, 'line_text_too_long'],
    [
      'a control character',
      async () => put(jobId, 2, { lines: [{ id: await lineId(), text: 'a\tb' }] }),
      400,
      'line_text_invalid_characters',
    ],
    ['a line break', async () => put(jobId, 2, { lines: [{ id: await lineId(), text: 'a\nb' }] }), 400, 'line_text_invalid_characters'],
    ['an unknown page', async () => put(jobId, 3, { lines: [{ id: 'x', text: 'x' }] }), 404, 'unknown_page'],
    ['a page that is no number', async () => client.get(`/v1/process-scan/${jobId}/pages/one`, auth), 404, 'unknown_page'],
    ['another account’s page', () => client.get(`/v1/process-scan/${jobId}/pages/1`, stranger), 404, 'job_not_found'],
    ['another account’s save', async () => put(jobId, 2, { lines: [{ id: await lineId(), text: 'x' }] }, stranger), 404, 'job_not_found'],
    ['another account’s timeline', () => client.get(`/v1/process-scan/${jobId}/timeline`, stranger), 404, 'job_not_found'],
    ['another account’s training', () => trainFrom(jobId, { checked_pages: [1] }, stranger), 404, 'job_not_found'],
  ];
  for (const [what, call, status, code] of cases) {
    test(`${what}: ${status} ${code}`, async () => {
      const response = await call();
      assert.equal(response.status, status, JSON.stringify(response.body));
      assert.equal(response.body.code, code);
    });
  }

  test('a failed job: 409 job_failed; a job still running: 409 job_not_done', async () => {
    const failed = await runJob(await makeZip([{ name: 'fail.jpg', data: await image('hooker.jpg') }]), ['failed']);
    const failedPage = await client.get(`/v1/process-scan/${failed}/pages/1`, auth);
    assert.equal(failedPage.status, 409);
    assert.equal(failedPage.body.code, 'job_failed');
    const running = await runJob(await makeZip([{ name: 'held.jpg', data: await image('hooker.jpg') }]), ['processing']);
    const save = await put(running, 1, { lines: [{ id: 'x', text: 'x' }] });
    assert.equal(save.status, 409);
    assert.equal(save.body.code, 'job_not_done');
    assert.equal(save.body.retryable, true);
  });

  test('an expired job: 410 result_expired, for the page and the save', async () => {
    const expiring = await runJob(await makeZip([{ name: 'hooker.jpg', data: await image('hooker.jpg') }]));
    const id = (await client.get(`/v1/process-scan/${expiring}/pages/1`, auth)).body.lines[0].id;
    // The read model says it expired (the expiry task would delete its files and record ResultExpired a moment later).
    const setExpiry = (sql: string) => runtime.db.pool.query(`update job_status set expires_at = ${sql} where job_id = $1`, [expiring]);
    const { rows } = await runtime.db.pool.query('select expires_at from job_status where job_id = $1', [expiring]);
    await setExpiry(`now() - interval '1 second'`);
    try {
      const page = await client.get(`/v1/process-scan/${expiring}/pages/1`, auth);
      assert.equal(page.status, 410);
      assert.equal(page.body.code, 'result_expired');
      const save = await put(expiring, 1, { lines: [{ id, text: 'too late' }] });
      assert.equal(save.status, 410);
      assert.equal(save.body.code, 'result_expired');
    } finally {
      await runtime.db.pool.query('update job_status set expires_at = $2 where job_id = $1', [expiring, rows[0].expires_at]);
    }
  });
});

describe('training on the job’s pages', () => {
  test('corrected lines, and every line of a checked page, become the ground truth of a queued training', async () => {
    const queued = await trainFrom(jobId, { checked_pages: [1], label: 'from my corrections' });
    assert.equal(queued.status, 202, JSON.stringify(queued.body));
    assert.equal(queued.body.pages_total, 1);
    assert.ok(queued.body.lines_total >= 20, `${queued.body.lines_total} lines`);
    const model = await runtime.db.pool.query('select ground_truth_key from models where model_id = $1', [queued.body.model_id]);
    const truth = await readGroundTruth(runtime.blobs, model.rows[0].ground_truth_key);
    assert.equal(truth.pages[0].lines[0].text, 'Corrigé par une personne');
    assert.ok(await runtime.blobs.stat(truth.pages[0].imageKey), 'the page image is copied to the model');
  });

  test('refusals: no corrected line on the pages chosen, too few lines, a bad body', async () => {
    const none = await trainFrom(jobId, { pages: [2] });
    assert.equal(none.status, 400);
    assert.equal(none.body.code, 'no_corrected_pages');
    const few = await trainFrom(jobId, { pages: [1] });
    assert.equal(few.status, 400);
    assert.equal(few.body.code, 'too_few_lines');
    const bad = await trainFrom(jobId, { pages: 'all' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_training_request');
    const outside = await trainFrom(jobId, { checked_pages: [7] });
    assert.equal(outside.status, 400);
    assert.equal(outside.body.code, 'invalid_training_request');
  });
});

test('projections verify', async () => {
  assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
});

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
