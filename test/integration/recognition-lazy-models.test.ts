// Models load when a page first needs them (docs/recognition.md, "Cold start"), with the real default
// setup: an engine loads no model until a page comes; a page laid out by its uploader never loads
// the segmenter or the detector, a handwritten page never loads the detector or the print reader,
// a printed one does; concurrent first pages share each load.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/platform/config.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import { configuredModelSpec } from '../../src/recognition/models/default-model.ts';
import { modelLoadTotals } from '../../src/recognition/models/onnx.ts';
import { allLines } from '../../src/recognition/page/page-result.ts';
import { recognizePage } from '../../src/recognition/recognize-page.ts';
import { PRINTED_PAGE } from '../support/recognition-fixtures.ts';

const config = loadConfig({});
const HANDWRITTEN = new URL('../fixtures/pages/copiste_wikitexte_0219_2.jpg', import.meta.url);
const engines: OcrEngine[] = [];

async function freshEngine(): Promise<OcrEngine> {
  const engine = await OcrEngine.load(configuredModelSpec(config.recognition.modelDir), {
    threads: config.recognition.threads,
    concurrency: config.recognition.concurrency,
    decoder: config.recognition.decoder,
  });
  engines.push(engine);
  return engine;
}

function read(engine: OcrEngine, image: Buffer, layoutXml?: Buffer) {
  return recognizePage(engine, image, {
    name: 'page',
    pageNumber: 1,
    maxPixels: config.limits.maxImagePixels,
    recognize: true,
    ...(layoutXml ? { layoutXml } : {}),
  });
}

after(async () => {
  await Promise.all(engines.map((engine) => engine.close()));
});

test('an engine loads no model until a page needs it, then only the ones that page needs', async () => {
  const engine = await freshEngine();
  assert.deepEqual(engine.loadedModels, []);
  // a handwritten page: laid out by the segmenter, read; the detector and the print reader are not loaded
  const handwritten = await read(engine, await readFile(HANDWRITTEN));
  assert.equal(handwritten.layoutBy, 'segmenter');
  assert.ok(allLines(handwritten.page).length > 5);
  assert.deepEqual(engine.loadedModels, ['segmentation', 'main', 'screening']);
  // the printed page with its own layout: recognition alone, no detector; the probe is surely
  // printed, so the print reader loads and reads the other lines
  const printed = await readFile(PRINTED_PAGE.imagePath);
  const uploaded = await read(engine, printed, await readFile(PRINTED_PAGE.xmlPath));
  assert.equal(uploaded.layoutBy, 'uploaded');
  assert.ok(allLines(uploaded.page).length > 20);
  assert.ok(uploaded.linesReadBy.print > 0, JSON.stringify(uploaded.linesReadBy));
  assert.deepEqual(engine.loadedModels, ['segmentation', 'main', 'screening', 'print']);
  // the printed page without its layout: the probe finds it printed, and the detector lays it out
  const detected = await read(engine, printed);
  assert.equal(detected.layoutBy, 'detector');
  assert.deepEqual(engine.loadedModels, ['detection', 'segmentation', 'main', 'screening', 'print']);
  // the page result names what laid the page out (the detector, and the segmenter whose probe lines
  // it kept) and what read it, loaded lazily or not
  assert.deepEqual(
    detected.page.producer.models.map((model) => model.role),
    ['detection', 'detection', 'recognition', 'recognition', 'recognition'],
  );
});

test('concurrent first pages on a fresh engine share each model load', async () => {
  const engine = await freshEngine();
  const spec = engine.spec;
  const files = [spec.segmentation?.file, spec.recognition.file, spec.screening?.recognition.file].filter((file) => file !== undefined);
  const loads = () => files.map((file) => modelLoadTotals().get(file)?.loads ?? 0);
  const before = loads();
  const image = await readFile(HANDWRITTEN);
  const [first, second] = await Promise.all([read(engine, image), read(engine, image)]);
  assert.deepEqual(
    allLines(first.page).map((line) => line.text),
    allLines(second.page).map((line) => line.text),
  );
  assert.deepEqual(
    loads().map((count, index) => count - before[index]),
    files.map(() => 1),
    'each model loaded once',
  );
  assert.deepEqual(engine.loadedModels, ['segmentation', 'main', 'screening']);
});

test('loadAll loads every model of the engine at once (for benchmarks that time pages apart from loading)', async () => {
  const engine = await freshEngine();
  await engine.loadAll();
  assert.deepEqual(engine.loadedModels, ['detection', 'segmentation', 'main', 'screening', 'print']);
});
