// Character confidences calibrated by the recognizer's manifest map (recognition/models/confidence-calibration.ts):
// the map itself, the manifest field, and the shipped model reading a real handwritten page with
// and without its map (same text, each confidence mapped, the recognizers' choice unchanged).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import { defaultModelSpec } from '../../src/recognition/models/default-model.ts';
import { loadModelSpec } from '../../src/recognition/models/model-manifest.ts';
import type { ModelSpec } from '../../src/recognition/models/model-spec.ts';
import { OcrEngine, type PieceReading } from '../../src/recognition/engine/ocr-engine.ts';
import { calibrateConfidence } from '../../src/recognition/models/confidence-calibration.ts';

test('the map interpolates between its points, is flat beyond them, and keeps the order of confidences', () => {
  const points = [
    [0.1, 0.5],
    [0.5, 0.7],
    [0.9, 0.9],
  ] as const;
  assert.equal(calibrateConfidence(0.05, points), 0.5);
  assert.equal(calibrateConfidence(0.1, points), 0.5);
  assert.ok(Math.abs(calibrateConfidence(0.3, points) - 0.6) < 1e-12);
  assert.ok(Math.abs(calibrateConfidence(0.7, points) - 0.8) < 1e-12);
  assert.equal(calibrateConfidence(0.99, points), 0.9);
  assert.equal(calibrateConfidence(0.42, []), 0.42, 'no points: the confidence as it is');
  const mapped = [0, 0.2, 0.4, 0.6, 0.8, 1].map((c) => calibrateConfidence(c, points));
  assert.deepEqual(
    mapped,
    [...mapped].sort((a, b) => a - b),
  );
});

test('a manifest may give a map per decoder; a map that falls or leaves 0..1 is refused', async () => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'hwr-calibration-'));
  try {
    await writeFile(path.join(directory, 'rec.onnx'), 'onnx');
    await writeFile(path.join(directory, 'charset.txt'), 'a\nb\n');
    const write = (confidenceCalibration: unknown) =>
      writeFile(
        path.join(directory, 'manifest.json'),
        JSON.stringify({
          format: 'hwr-model/1',
          name: 'calibrated',
          version: '1',
          detection: { model: 'builtin' },
          recognition: { file: 'rec.onnx', charset: 'charset.txt', confidenceCalibration },
        }),
      );
    await write({
      beam: [
        [0.1, 0.5],
        [0.9, 0.95],
      ],
    });
    assert.deepEqual(loadModelSpec(directory).recognition.confidenceCalibration, {
      greedy: null,
      beam: [
        [0.1, 0.5],
        [0.9, 0.95],
      ],
    });
    await write(null);
    assert.deepEqual(loadModelSpec(directory).recognition.confidenceCalibration, { greedy: null, beam: null });
    for (const bad of [
      {
        greedy: [
          [0.5, 0.6],
          [0.6, 0.4],
        ],
      },
      { beam: [[0.5, 1.2]] },
      { beam: [] },
      { greedy: 'steep' },
      [[0.1, 0.2]],
    ]) {
      await write(bad);
      assert.throws(
        () => loadModelSpec(directory),
        (error) =>
          error instanceof PipelineError &&
          error.code === 'model_invalid' &&
          /manifest\.recognition\.confidenceCalibration/.test(error.message),
        JSON.stringify(bad),
      );
    }
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
});

test('the shipped model reads a handwritten page to the same text with and without its map, each confidence mapped', async () => {
  const spec = defaultModelSpec();
  const points = spec.recognition.confidenceCalibration.beam;
  assert.ok(points, 'the default recognizer ships a map for beam search');
  const raw: ModelSpec = { ...spec, recognition: { ...spec.recognition, confidenceCalibration: { greedy: null, beam: null } } };
  const { raster } = await prepareImage(readFileSync(path.resolve(import.meta.dirname, '../fixtures/pages/copiste_wikitexte_0219_2.jpg')), {
    name: 'copiste',
    maxPixels: 100_000_000,
  });
  const read = async (modelSpec: ModelSpec): Promise<PieceReading[]> => {
    const engine = await OcrEngine.load(modelSpec, { threads: 2, concurrency: 1, decoder: 'beam' });
    try {
      const { readings } = await engine.read(raster, await engine.layout(raster));
      return [...readings.values()];
    } finally {
      await engine.close();
    }
  };
  const [calibrated, uncalibrated] = [await read(spec), await read(raw)];
  assert.equal(calibrated.length, uncalibrated.length);
  let characters = 0;
  let raised = 0;
  calibrated.forEach((reading, index) => {
    const before = uncalibrated[index];
    assert.equal(reading.recognizer, before.recognizer, 'the choice between the recognizers is made before calibration');
    assert.deepEqual(
      reading.characters.map((c) => c.text),
      before.characters.map((c) => c.text),
    );
    reading.characters.forEach((character, k) => {
      const expected =
        reading.recognizer === 'main' ? calibrateConfidence(before.characters[k].confidence, points) : before.characters[k].confidence;
      assert.ok(Math.abs(character.confidence - expected) < 1e-12);
      characters += 1;
      if (character.confidence > before.characters[k].confidence) raised += 1;
    });
  });
  assert.ok(characters > 200, `${characters} characters read`);
  // beam search's confidences are too low where the language model chose (docs/recognition.md, "Confidence")
  assert.ok(raised > 0, 'some low confidences are raised');
});
