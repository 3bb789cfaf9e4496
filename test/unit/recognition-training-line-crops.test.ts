// Training lines cut by the service's own code (src/recognition/training/line-crops.ts): on a real
// handwritten page with its ALTO ground truth, each line's crop is the image the recognizer reads
// when a job brings that layout. The proof goes through the engine: the engine reads each line
// alone (the uploaded-layout path, greedy decoding), and the model's output on our crop, decoded
// the same way, gives the same characters at the same columns with the same confidences.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { decodeCtc } from '../../src/recognition/decoding/ctc-decode.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import { type RgbImage, samplePatch } from '../../src/recognition/image/raster.ts';
import { layoutRegionsOf, parseUploadedLayout, type UploadedLayout } from '../../src/recognition/layout/uploaded-layout.ts';
import { loadCharacterClasses } from '../../src/recognition/models/charset.ts';
import { loadModelSpec } from '../../src/recognition/models/model-manifest.ts';
import type { ModelSpec } from '../../src/recognition/models/model-spec.ts';
import { createSession, type InferenceSession } from '../../src/recognition/models/onnx.ts';
import { placeCharacters, scoreCrops } from '../../src/recognition/reading/text-recognizer.ts';
import { cutTrainingLines, greyLevels, type TrainingLineCrop } from '../../src/recognition/training/line-crops.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PAGE = path.join(ROOT, 'test/fixtures/export/cremma19_zola_f207.jpg');
const ALTO = path.join(ROOT, 'test/fixtures/export/cremma19_zola_f207.xml');

// the shipped recognizer alone (no screening), its confidences as the model gives them
const base = loadModelSpec(path.join(ROOT, 'models/hwr-htr-v3'));
const spec: ModelSpec = {
  ...base,
  screening: null,
  recognition: { ...base.recognition, confidenceCalibration: { greedy: null, beam: null } },
};

let raster: RgbImage;
let layout: UploadedLayout;
let crops: TrainingLineCrop[];
let engine: OcrEngine;
let session: InferenceSession;

before(async () => {
  ({ raster } = await prepareImage(readFileSync(PAGE), { name: 'cremma19_zola_f207.jpg', maxPixels: 100_000_000 }));
  layout = parseUploadedLayout(readFileSync(ALTO), raster);
  crops = cutTrainingLines(
    raster,
    layout.regions.flatMap((region) => region.lines),
    spec.recognition,
  );
  engine = await OcrEngine.load(spec, { threads: 1, concurrency: 1, decoder: 'greedy' });
  session = await createSession(spec.recognition.file, 1);
});

after(async () => {
  await engine?.close();
  await session?.release();
});

test('one crop per ground-truth line, in reading order, with its id and text, at the model height', () => {
  const lines = layout.regions.flatMap((region) => region.lines);
  assert.ok(lines.length >= 20, `${lines.length} lines`);
  assert.deepEqual(
    crops.map((crop) => [crop.id, crop.text]),
    lines.map((line) => [line.id, line.text]),
  );
  for (const { crop, rect } of crops) {
    assert.equal(crop.height, spec.recognition.inputHeight);
    assert.equal(crop.pixels.length, crop.width * crop.height * 3);
    // cropHeightScale (1.2 for hwr-htr-v3) applied to the outline's rectangle, and the width scaled with the height
    assert.ok(Math.abs(crop.width - Math.round((rect.width * crop.height) / rect.height)) <= 1 || crop.width === spec.recognition.minWidth);
  }
});

test('each crop reads as the engine reads the same line of the uploaded layout: same characters, columns and confidences', async () => {
  const classes = loadCharacterClasses(spec.recognition);
  const greedy = (scores: Float32Array, offset: number, stride: number, steps: number, logits: boolean) =>
    decodeCtc(scores, offset, stride, steps, classes, logits);
  const gate = <T>(task: () => Promise<T>) => task();
  const laidOut = layoutRegionsOf(layout).flatMap((region) => region.lines);
  // every fourth line, each read alone so that both runs batch (and pad) it the same way
  for (let index = 0; index < laidOut.length; index += 4) {
    const line = laidOut[index];
    const { readings } = await engine.read(raster, [{ type: 'paragraph', lines: [line] }]);
    const engineReading = readings.get(line.fragments[0]);
    assert.ok(engineReading, `line ${index} read`);
    const [frames] = await scoreCrops(session, spec.recognition, classes, [crops[index].crop], gate);
    const ours = placeCharacters(frames, greedy);
    assert.equal(engineReading.crop.width, crops[index].crop.width, `line ${index}: crop width`);
    assert.equal(engineReading.crop.height, crops[index].crop.height);
    assert.ok(ours.length > 0, `line ${index} reads something`);
    assert.deepEqual(ours, engineReading.characters, `line ${index}: ${JSON.stringify(crops[index].text)}`);
  }
});

test('the 8-bit grey levels written for the trainer are the luminance the model is fed, within half a level', () => {
  for (const { crop } of crops.slice(0, 5)) {
    const grey = greyLevels(crop);
    assert.equal(grey.length, crop.width * crop.height);
    for (let i = 0; i < grey.length; i += 1) {
      const exact = 0.299 * crop.pixels[i * 3] + 0.587 * crop.pixels[i * 3 + 1] + 0.114 * crop.pixels[i * 3 + 2];
      assert.ok(Math.abs(grey[i] - exact) <= 0.5 + 1e-9, `pixel ${i}: ${grey[i]} against ${exact}`);
    }
  }
});

test("a training crop is filtered as the manifest's reading crops are: area-averaged, or one bilinear sample a pixel", () => {
  const lines = layout.regions.flatMap((region) => region.lines);
  const bilinear = cutTrainingLines(raster, lines, { ...spec.recognition, resampling: 'bilinear' });
  let differing = 0;
  for (const [index, { rect, crop }] of bilinear.entries()) {
    assert.deepEqual(crop.pixels, samplePatch(raster, crop.frame, crop.width, crop.height, 'bilinear'), `line ${index}`);
    assert.deepEqual(
      crops[index].crop.pixels,
      samplePatch(raster, crops[index].crop.frame, crop.width, crop.height, 'area'),
      `line ${index}`,
    );
    assert.deepEqual(rect, crops[index].rect, 'the same rectangle either way');
    if (crop.pixels.some((value, i) => value !== crops[index].crop.pixels[i])) differing += 1;
  }
  // most of this page's crops shrink it (or its halved copy) more than 1.25 times, where the area filter averages
  assert.ok(differing >= lines.length / 2, `${differing} of ${lines.length} crops differ between the two filters`);
});
