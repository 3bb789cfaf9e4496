// The export task for real: real page images and page results in a real (filesystem) blob
// store, the archive streamed into it, every file checked by check-result-archive.ts.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import type { ExportTask } from '../../src/pipeline/pipeline.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { fixturePages, stageExportJob, type StagedPage } from '../support/export-job.ts';
import { layoutOnlyPage, syntheticPage } from '../support/synthetic-pages.ts';
import { regionsTurnedBack } from '../../src/recognition/engine/turned-page.ts';

const log = pino({ level: 'silent' });
const pipeline = createExportPipeline();
let root: string;
let blobs: FilesystemBlobStore;
let pages: StagedPage[];

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-export-test-'));
  blobs = new FilesystemBlobStore(root);
  pages = await fixturePages();
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function run(task: ExportTask, signal = new AbortController().signal) {
  return pipeline.exportJob(task, { blobs, signal, log });
}

describe('export pipeline', () => {
  it('writes a complete, valid PDF/A-2b archive for real pages (TIFF, JPEG, PNG)', async () => {
    const task = await stageExportJob(blobs, pages);
    const outcome = await run(task);
    const zip = await blobs.get(task.archiveKey);
    assert.equal(outcome.bytes, zip.length);
    assert.equal(outcome.sha256, createHash('sha256').update(zip).digest('hex'));

    const checked = await checkResultArchive(zip, { teiSchema: true });
    const { manifest } = checked;
    assert.equal(manifest.job_id, task.jobId);
    assert.equal(manifest.created_at, task.createdAt);
    assert.deepEqual(manifest.options, {
      llm_tier: 'balanced',
      preset: 'generic',
      pipeline_steps: ['layout', 'recognition', 'correction', 'export'],
      pdf_format: 'pdfa-2b',
      model: 'default',
    });
    assert.deepEqual(manifest.software, { name: 'hwr', version: '0.1.0' });
    assert.deepEqual(
      manifest.models.map((model) => model.role),
      ['detection', 'recognition'],
    );
    assert.deepEqual(
      manifest.pages.map((page) => [page.source.name, page.source.sha256, page.files.page]),
      task.pages.map((page, index) => [
        page.source.name,
        page.source.sha256,
        `page/000${index + 1}_${path.parse(page.source.name).name}.xml`,
      ]),
    );
    assert.deepEqual(
      [...checked.files.keys()],
      [
        ...manifest.pages.flatMap((page) => [page.files.page, page.files.alto, page.files.text]),
        `${task.jobId}.txt`,
        `${task.jobId}.tei.xml`,
        `${task.jobId}.pdf`,
        'manifest.json',
      ],
      'documented order: per page PAGE, ALTO, text; the job text and TEI; then the PDF; the manifest last',
    );
    assert.ok(
      checked.pages.every((page) => page.pdfWordsChecked > 50),
      'every word of the text layer was checked against its box',
    );
    assert.match(checked.pages[0].pdfText!, /Aufklaͤrung iſt der Ausgang des Men-\nſchen aus ſeiner ſelbſt/);
    // Word boundaries survive extraction where the geometry is ordinary (the Kant page has a
    // drop capital "A" glued to "ufklaͤrung" by pdf.js, which the whitespace-free check allows).
    for (const page of checked.pages.slice(1)) {
      assert.equal(page.pdfText!.replace(/\s+/g, ' ').trim(), page.text.replace(/\s+/g, ' ').trim());
    }
  });

  it('gives byte-identical archives for the same inputs (retries are idempotent)', async () => {
    const task = await stageExportJob(blobs, pages.slice(1, 2));
    const first = await run(task);
    const second = await run({ ...task, archiveKey: `${task.archiveKey}.again` });
    assert.equal(second.sha256, first.sha256);
  });

  it('writes a plain PDF for pdf_format=pdf and no PDF for none', async () => {
    const plain = await stageExportJob(blobs, pages.slice(1, 2), { pdfFormat: 'pdf' });
    await run(plain);
    const checkedPlain = await checkResultArchive(await blobs.get(plain.archiveKey), { whitespace: 'collapse' });
    assert.equal(checkedPlain.manifest.pdf?.format, 'pdf');

    const none = await stageExportJob(blobs, pages.slice(1, 2), { pdfFormat: 'none' });
    await run(none);
    const checkedNone = await checkResultArchive(await blobs.get(none.archiveKey));
    assert.equal(checkedNone.manifest.pdf, null);
    assert.equal(checkedNone.files.size, 6);
  });

  it('exports layout-only jobs, empty pages and XML special characters', async () => {
    const image = pages[1].image; // any real JPEG; the results below say 1200 x 800
    const task = await stageExportJob(
      blobs,
      [
        { name: 'a/b/Brief & "Nachtrag" <1>.jpg', image, result: syntheticPage() },
        { name: 'leer.jpg', image, result: syntheticPage({ regions: [] }) },
        { name: 'layout.jpg', image, result: layoutOnlyPage() },
      ],
      { pipelineSteps: ['layout', 'export'] },
    );
    await run(task);
    const checked = await checkResultArchive(await blobs.get(task.archiveKey), { whitespace: 'collapse' });
    assert.deepEqual(
      checked.manifest.pages.map((page) => page.files.text),
      ['text/0001_Brief_Nachtrag_1.txt', 'text/0002_leer.txt', 'text/0003_layout.txt'],
    );
    assert.deepEqual(
      checked.pages.map((page) => page.text === ''),
      [false, true, true],
    );
    assert.deepEqual(checked.manifest.options.pipeline_steps, ['layout', 'export']);
  });

  it('exports a page read upside down: the manifest, PAGE and ALTO say so, the archive checks out', async () => {
    const image = pages[1].image; // any real JPEG; the results below say 1200 x 800
    const upright = syntheticPage();
    const turned = syntheticPage({ orientation: 180, regions: regionsTurnedBack(upright.regions, 180, 1200, 800) });
    const task = await stageExportJob(blobs, [
      { name: 'upright.jpg', image, result: upright },
      { name: 'turned.jpg', image, result: turned },
    ]);
    await run(task);
    const checked = await checkResultArchive(await blobs.get(task.archiveKey), { whitespace: 'collapse' });
    assert.deepEqual(
      checked.manifest.pages.map((page) => page.orientation),
      [0, 180],
    );
    const pageXml = checked.files.get(checked.manifest.pages[1].files.page)?.toString('utf8') ?? '';
    assert.match(pageXml, /<Page [^>]*orientation="180"/);
    assert.match(checked.files.get(checked.manifest.pages[1].files.alto)?.toString('utf8') ?? '', /<Page [^>]*ROTATION="180"/);
    assert.equal(checked.pages[1].text, checked.pages[0].text);
  });

  it('fails with a typed error and leaves no archive when a page result or image is missing', async () => {
    const task = await stageExportJob(blobs, pages.slice(1, 3));
    await blobs.deletePrefix(task.pages[1].resultKey);
    await assert.rejects(run(task), { name: 'ExportError', code: 'page_result_missing', pageNumber: 2 });
    assert.equal(await blobs.stat(task.archiveKey), null);

    const noImage = await stageExportJob(blobs, pages.slice(1, 3));
    await blobs.deletePrefix(noImage.pages[0].source.blobKey);
    await assert.rejects(run(noImage), { code: 'page_image_missing', pageNumber: 1 });
    assert.equal(await blobs.stat(noImage.archiveKey), null);
    const leftovers = await readdir(path.dirname(blobs.localPath(noImage.archiveKey)));
    assert.ok(!leftovers.some((name) => name.endsWith('.tmp')), 'no partial archive is left behind');
  });

  it('stops when the job is cancelled', async () => {
    const task = await stageExportJob(blobs, pages.slice(1, 2));
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(run(task, controller.signal), { name: 'AbortError' });
    assert.equal(await blobs.stat(task.archiveKey), null);
  });
});
