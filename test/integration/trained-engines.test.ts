// The engines a worker reads trained models with (src/pipeline/trained-engines.ts): a model's files
// fetched once from the blob store, its recognizer loaded beside the shared engine's other models,
// the least recently used one unloaded when the memory budget is exceeded, never one a page is
// reading with. Real models: the shipped recognizer's directory stored twice as two "trained" models.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { trainedModelPrefix } from '../../src/blobs/blob-keys.ts';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { TrainedEngines } from '../../src/pipeline/trained-engines.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import { defaultModelSpec } from '../../src/recognition/models/default-model.ts';

const RECOGNIZER = path.resolve(import.meta.dirname, '../../models/hwr-htr-v3');
const MODEL_A = '11111111-1111-4111-8111-111111111111';
const MODEL_B = '22222222-2222-4222-8222-222222222222';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'hwr-trained-engines-'));
const blobs = new FilesystemBlobStore(path.join(scratch, 'blobs'));
let base: OcrEngine;

before(async () => {
  for (const model of [MODEL_A, MODEL_B])
    for (const file of readdirSync(RECOGNIZER).filter((name) => !name.endsWith('.md') && !name.endsWith('.csv')))
      await blobs.put(`${trainedModelPrefix(model)}/${file}`, readFileSync(path.join(RECOGNIZER, file)));
  base = await OcrEngine.load(defaultModelSpec(), { threads: 1, concurrency: 1, decoder: 'greedy' });
});
after(async () => {
  await base.close();
  rmSync(scratch, { recursive: true, force: true });
});

test('a model is fetched once into the cache folder and its engine reused; the shared parts stay shared', async () => {
  const engines = new TrainedEngines({ cacheDir: path.join(scratch, 'cache-1'), memoryMb: 1024 });
  const first = await engines.withEngine(MODEL_A, base, blobs, async (engine) => engine);
  const second = await engines.withEngine(MODEL_A, base, blobs, async (engine) => engine);
  assert.equal(first, second);
  assert.notEqual(first, base);
  assert.deepEqual(engines.models, [MODEL_A]);
  assert.ok(readdirSync(path.join(scratch, 'cache-1', MODEL_A)).includes('rec.onnx'));
  // The trained model's recognizer, with the base's detector and screening.
  assert.equal(first.spec.detection, base.spec.detection);
  assert.equal(first.spec.screening, base.spec.screening);
  await engines.close();
  assert.deepEqual(engines.models, []);
});

test('over the budget the least recently used idle model is unloaded, not one a page reads with', async () => {
  // A model's estimate is six times its files (about 17 MB): 64 MB holds none beyond the one in use.
  const engines = new TrainedEngines({ cacheDir: path.join(scratch, 'cache-2'), memoryMb: 64 });
  await engines.withEngine(MODEL_A, base, blobs, async () => {
    // A is in use while B loads: both stay, over the budget, until A's page is done.
    await engines.withEngine(MODEL_B, base, blobs, async () => {
      assert.deepEqual(engines.models.sort(), [MODEL_A, MODEL_B].sort());
    });
    // B is idle and over the budget: it goes; A, still reading, stays.
    assert.deepEqual(engines.models, [MODEL_A]);
  });
  assert.deepEqual(engines.models, [], 'A, idle and over the budget once its page is done, goes too');
  // Loading it again fetches nothing new and reads.
  const engine = await engines.withEngine(MODEL_B, base, blobs, async (loaded) => loaded);
  assert.ok(engine instanceof OcrEngine);
  await engines.close();
});

test('a model with no files in the blob store is an error, and nothing is left half-fetched', async () => {
  const engines = new TrainedEngines({ cacheDir: path.join(scratch, 'cache-3'), memoryMb: 512 });
  const missing = '33333333-3333-4333-8333-333333333333';
  await assert.rejects(
    engines.withEngine(missing, base, blobs, async () => null),
    /holds no model \(no manifest\.json\)/,
  );
  assert.deepEqual(readdirSync(path.join(scratch, 'cache-3')), []);
});
