// The engine's page task with the real pipeline: blobs in a real blob store, the real
// built-in models, steps entered in order, layout-only jobs, cancellation, the
// correction hand-off, bad images and model directories.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, mkdir, copyFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { modelSetupNotice } from '../../src/recognition/models/default-model.ts';
import { builtinModelSpec } from '../../src/recognition/models/model-manifest.ts';
import { createPagePipeline } from '../../src/pipeline/page-pipeline.ts';
import { allLines, type PageResult } from '../../src/recognition/page/page-result.ts';
import type { CorrectionInput, PageContext, PageCorrector, PageStep, PageTask, PipelineStep } from '../../src/pipeline/pipeline.ts';
import { closeSharedEngines } from '../../src/pipeline/shared-engine.ts';
import { PRINTED_PAGE } from '../support/recognition-fixtures.ts';

let root: string;
let blobs: FilesystemBlobStore;
const config: Config = loadConfig({});
const log = createLogger('silent');

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-recognition-'));
  blobs = new FilesystemBlobStore(path.join(root, 'blobs'));
  await blobs.put('jobs/j1/pages/1.png', await readFile(PRINTED_PAGE.imagePath));
  await blobs.put('jobs/j1/pages/2.jpg', Buffer.from('not an image at all, just text that claims to be a JPEG'));
});

after(async () => {
  await closeSharedEngines();
  await rm(root, { recursive: true, force: true });
});

function task(steps: PipelineStep[], blobKey = 'jobs/j1/pages/1.png', pageNumber = 1): PageTask {
  return {
    jobId: 'j1',
    accountId: 'a1',
    pageCount: 2,
    page: { pageNumber, name: `scans/page-${pageNumber}.png`, blobKey, sha256: 'unused', bytes: 0 },
    options: { llmTier: 'balanced', preset: 'generic', pipelineSteps: steps, pdfFormat: 'none', webhookUrl: null },
  };
}

function context(steps: PageStep[], signal = new AbortController().signal): PageContext {
  return { blobs, signal, log, enterStep: async (step) => void steps.push(step) };
}

test('a page goes through layout and recognition, entering each step in order', async () => {
  const entered: PageStep[] = [];
  const page = await createPagePipeline({ config }).processPage(task(['layout', 'recognition', 'export']), context(entered));
  assert.deepEqual(entered, ['layout', 'recognition']);
  assert.equal(page.schema, 'hwr.page-result/1');
  assert.equal(page.pageNumber, 1);
  assert.equal(page.image.name, 'scans/page-1.png');
  assert.equal(page.image.format, 'png');
  assert.deepEqual([page.image.width, page.image.height], [2550, 3300]);
  assert.match(page.image.sha256, /^[0-9a-f]{64}$/);
  assert.equal(page.image.dpi, 300);
  assert.ok(allLines(page).length >= 26);
  assert.match(allLines(page)[0].text, /Holmwood introduced him to me/);
  assert.deepEqual(page.warnings, []);
  assert.equal(page.producer.software, 'hwr');
  assert.ok(page.producer.models.some((model) => model.role === 'recognition' && model.name.includes('PP-OCRv4')));
  // the page is surely printed: our print reader read the lines but PP-OCRv4's probe, and the page names it
  assert.ok(page.producer.models.some((model) => model.role === 'recognition' && model.name.startsWith('hwr-print ')));
});

test('a layout-only job gives lines with geometry and empty text', async () => {
  const entered: PageStep[] = [];
  const page = await createPagePipeline({ config }).processPage(task(['layout', 'export']), context(entered));
  assert.deepEqual(entered, ['layout']);
  const lines = allLines(page);
  assert.ok(lines.length >= 26);
  for (const line of lines) {
    assert.equal(line.text, '');
    assert.deepEqual(line.words, []);
    assert.ok(line.polygon.length >= 4 && line.baseline.length >= 2);
  }
  // the main recognizer read a few lines both ways to tell the page's side (docs/recognition.md, "Pages upside down or sideways")
  assert.deepEqual(
    page.producer.models.map((model) => model.role),
    ['detection', 'orientation'],
  );
});

test('the correction step hands the recognised page to the corrector and returns its page', async () => {
  const entered: PageStep[] = [];
  const received: { page: PageResult; input: CorrectionInput }[] = [];
  const corrector: PageCorrector = {
    async correct(page, input) {
      received.push({ page, input });
      return { ...page, warnings: [...page.warnings, 'checked by the test corrector'] };
    },
  };
  const page = await createPagePipeline({ config, corrector }).processPage(
    task(['layout', 'recognition', 'correction', 'export']),
    context(entered),
  );
  assert.deepEqual(entered, ['layout', 'recognition', 'correction']);
  assert.equal(received.length, 1);
  assert.equal(received[0].input.pageImage.key, 'jobs/j1/pages/1.png');
  assert.deepEqual(await received[0].input.pageImage.read(), await readFile(PRINTED_PAGE.imagePath), 'read from the blob store');
  assert.equal(received[0].input.options.preset, 'generic');
  assert.ok(allLines(received[0].page).length >= 26);
  assert.deepEqual(page.warnings, ['checked by the test corrector']);
});

test('without a corrector the correction step is recorded and skipped with a warning', async () => {
  const entered: PageStep[] = [];
  const page = await createPagePipeline({ config }).processPage(task(['layout', 'recognition', 'correction', 'export']), context(entered));
  assert.deepEqual(entered, ['layout', 'recognition', 'correction']);
  assert.deepEqual(page.warnings, ['correction skipped: no corrector configured']);
});

test('a cancelled job stops between steps with the signal reason', async () => {
  const controller = new AbortController();
  const reason = new Error('job cancelled by the client');
  const entered: PageStep[] = [];
  const ctx: PageContext = {
    blobs,
    log,
    signal: controller.signal,
    enterStep: async (step) => {
      entered.push(step);
      if (step === 'layout') controller.abort(reason);
    },
  };
  await assert.rejects(
    createPagePipeline({ config }).processPage(task(['layout', 'recognition', 'export']), ctx),
    (error) => error === reason,
  );
  assert.deepEqual(entered, ['layout']);
});

test('a corrupt image fails the page with a typed, permanent error', async () => {
  await assert.rejects(
    createPagePipeline({ config }).processPage(task(['layout', 'recognition', 'export'], 'jobs/j1/pages/2.jpg', 2), context([])),
    (error) => {
      assert.ok(error instanceof PipelineError);
      assert.equal(error.code, 'image_unreadable');
      assert.equal(error.retryable, false);
      assert.match(error.message, /scans\/page-2\.png/);
      return true;
    },
  );
});

test('an image over MAX_IMAGE_PIXELS is refused before decoding', async () => {
  const small = { ...config, limits: { ...config.limits, maxImagePixels: 1_000_000 } };
  await assert.rejects(createPagePipeline({ config: small }).processPage(task(['layout', 'export']), context([])), (error) => {
    assert.ok(error instanceof PipelineError);
    assert.equal(error.code, 'image_too_large');
    assert.match(error.message, /8415000 pixels \(2550x3300\); the limit is 1000000$/);
    assert.equal(error.setting, 'MAX_IMAGE_PIXELS', 'the setting for the operator, not in the message');
    return true;
  });
});

test('MODEL_DIR: a model directory in the documented format is used', async () => {
  // The built-in models described by a manifest in a directory of their own.
  const builtin = builtinModelSpec();
  const directory = path.join(root, 'my-model');
  await mkdir(directory);
  await copyFile(builtin.recognition.charset, path.join(directory, 'keys.txt'));
  await writeFile(
    path.join(directory, 'manifest.json'),
    JSON.stringify({
      format: 'hwr-model/1',
      name: 'pp-ocrv4-test-copy',
      version: '2026.1',
      detection: { file: builtin.detection.file },
      recognition: {
        file: builtin.recognition.file,
        charset: 'keys.txt',
        inputHeight: 48,
        channels: 3,
        mean: [0.5],
        std: [0.5],
        blankIndex: 0,
        appendSpace: true,
        padding: 'zero',
        restrictTo: 'latin',
      },
    }),
  );
  const custom = { ...config, recognition: { ...config.recognition, modelDir: directory } };
  const page = await createPagePipeline({ config: custom }).processPage(task(['layout', 'recognition', 'export']), context([]));
  assert.deepEqual(
    page.producer.models.map((model) => [model.role, model.name, model.version]),
    [
      ['detection', 'pp-ocrv4-test-copy (ch_PP-OCRv4_det_infer.onnx)', '2026.1'],
      ['recognition', 'pp-ocrv4-test-copy (ch_PP-OCRv4_rec_infer.onnx)', '2026.1'],
    ],
  );
  assert.match(allLines(page)[0].text, /Holmwood introduced him to me/);
});

test('MODEL_DIR: a broken model directory fails with model_invalid, listing every problem', async () => {
  const directory = path.join(root, 'broken-model');
  await mkdir(directory);
  await writeFile(
    path.join(directory, 'manifest.json'),
    JSON.stringify({
      format: 'hwr-model/1',
      name: 'broken',
      detection: { file: 'missing.onnx' },
      recognition: { inputHeight: 'tall', channels: 2 },
    }),
  );
  const broken = { ...config, recognition: { ...config.recognition, modelDir: directory } };
  await assert.rejects(createPagePipeline({ config: broken }).processPage(task(['layout', 'export']), context([])), (error) => {
    assert.ok(error instanceof PipelineError);
    assert.equal(error.code, 'model_invalid');
    for (const problem of [
      'detection.file: file',
      'recognition.file is required',
      'recognition.charset is required',
      'recognition.inputHeight must be a number',
      'recognition.channels must be 1 or 3',
      'manifest.version is required',
    ]) {
      assert.ok(error.message.includes(problem), `missing "${problem}" in: ${error.message}`);
    }
    return true;
  });
});

test('a worker reads its model setup at start: a broken MODEL_DIR fails the start, the default is named in the log', async () => {
  const directory = path.join(root, 'no-such-model');
  const logged: Array<{ level: string; message: string }> = [];
  const log = createLogger('silent');
  for (const level of ['info', 'warn'] as const) log[level] = ((message: string) => logged.push({ level, message })) as never;
  await assert.rejects(defaultPipelines({ ...config, recognition: { ...config.recognition, modelDir: directory } }, log), (error) => {
    assert.ok(error instanceof PipelineError);
    assert.equal(error.code, 'model_invalid');
    return true;
  });
  const pipelines = await defaultPipelines({ ...config, recognition: { ...config.recognition, modelDir: null } }, log);
  await pipelines.close();
  assert.deepEqual(logged, [
    { level: 'info', message: 'recognition models: hwr-default 1 (recognizer hwr-htr 3.3-int8, print reader hwr-print 1-int8)' },
  ]);
  // Without models/default, PP-OCRv4 alone, said as a warning.
  assert.equal(modelSetupNotice(builtinModelSpec()).level, 'warn');
  assert.match(modelSetupNotice(builtinModelSpec()).message, /built-in PP-OCRv4 alone .* it reads print, not handwriting/);
});

test('pages whose pixels do not fit the budget together run one after the other, and both finish', async () => {
  const { width = 0, height = 0 } = await (await import('sharp')).default(PRINTED_PAGE.imagePath).metadata();
  const oneAtATime = { ...config, limits: { ...config.limits, maxPixelsInFlight: width * height } };
  const pipeline = createPagePipeline({ config: oneAtATime });
  const timeline: string[] = [];
  const traced = (name: string): PageContext => ({
    blobs,
    signal: new AbortController().signal,
    log,
    enterStep: async (step) => void timeline.push(`${name}:${step}`),
  });
  const run = (name: string) => pipeline.processPage(task(['layout', 'recognition', 'export']), traced(name));
  const pages = await Promise.all([run('a'), run('b')]);
  assert.ok(pages.every((page) => allLines(page).length > 0));
  // Whichever page got the pixels first, the other enters its first step only after that one passed its last.
  const first = timeline[0].split(':')[0];
  const second = first === 'a' ? 'b' : 'a';
  assert.deepEqual(timeline, [`${first}:layout`, `${first}:recognition`, `${second}:layout`, `${second}:recognition`]);
});
