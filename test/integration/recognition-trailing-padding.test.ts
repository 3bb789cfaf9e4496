// The manifest's `recognition.trailingPadding` with the real hwr-htr-v3 model on the lines of a real
// page: every line reaches the model with that much white paper after it, batched or alone, and is
// decoded over its own frames only; and batches are cut while the model runs the batch before.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import test from 'node:test';
import { prepareImageFile } from '../../src/recognition/image/prepare-image.ts';
import { enclosingRectOfPoints } from '../../src/recognition/page/geometry.ts';
import { loadCharacterClasses } from '../../src/recognition/models/charset.ts';
import { loadModelSpec } from '../../src/recognition/models/model-manifest.ts';
import type { RecognitionSpec } from '../../src/recognition/models/model-spec.ts';
import { createSession, floatTensor, runModel, whiteValue, writeNormalisedPlanes } from '../../src/recognition/models/onnx.ts';
import {
  cropLine,
  cropWidth,
  framesCovering,
  scoreCrops,
  type CropSource,
  type LineCrop,
} from '../../src/recognition/reading/text-recognizer.ts';
import { groundTruthLines, MARGINAL_PAGE } from '../support/recognition-fixtures.ts';

const MODEL_DIR = fileURLToPath(new URL('../../models/hwr-htr-v3', import.meta.url));
const gate = <T>(task: () => Promise<T>): Promise<T> => task();

/** The model's frames for one crop followed by `padding` white columns, run on its own. */
async function framesAlone(spec: RecognitionSpec, crop: LineCrop, padding: number, session: Awaited<ReturnType<typeof createSession>>) {
  const width = Math.ceil((crop.width + padding) / spec.widthMultiple) * spec.widthMultiple;
  const input = new Float32Array(spec.inputHeight * width).fill(whiteValue(spec, 0));
  writeNormalisedPlanes(crop.pixels, crop.width, spec.inputHeight, spec, input, 0, width);
  const output = await runModel(session, floatTensor(input, [1, 1, spec.inputHeight, width]));
  const steps = framesCovering(crop.width, width / output.dims[1], output.dims[1]);
  return { steps, scores: output.data.slice(0, steps * output.dims[2]) };
}

function maxDifference(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let max = 0;
  for (let i = 0; i < a.length; i += 1) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

test('every line reaches the model with the trailing padding after it, alone or batched, and keeps only its own frames', async () => {
  const shipped = loadModelSpec(MODEL_DIR).recognition;
  assert.equal(shipped.trailingPadding, 32, 'hwr-htr-v3 reads every line with 32 columns of paper after it (docs/recognition.md)');
  const classes = loadCharacterClasses(shipped);
  const session = await createSession(shipped.file, 1);
  try {
    const { raster: image } = await prepareImageFile(MARGINAL_PAGE.imagePath, { name: 'marginal', maxPixels: 100_000_000 });
    const lines = (await groundTruthLines(MARGINAL_PAGE)).filter((line) => line.polygon.length >= 3);
    const crops = lines.slice(0, 6).map((line) => cropLine(image, enclosingRectOfPoints(line.polygon, 0), shipped));
    // two lines of different widths that the batch planner puts together (within 1.35x of each other)
    const byWidth = [...crops].sort((a, b) => a.width - b.width);
    const narrow = byWidth[0];
    const wide = byWidth.findLast((crop) => crop.width <= narrow.width * 1.3);
    assert.ok(narrow && wide && wide.width > narrow.width + 4, 'the page has two lines of close but different widths');

    const batched = await scoreCrops(session, shipped, classes, [narrow, wide], gate);
    for (const [crop, scored] of [
      [narrow, batched[0]],
      [wide, batched[1]],
    ] as const) {
      const alone = await framesAlone(shipped, crop, shipped.trailingPadding, session);
      assert.equal(scored.steps, alone.steps, 'decoded over the frames that cover the line, not its padding');
      assert.equal(scored.width, crop.width);
      if (crop === wide) {
        // the widest line of its batch gets exactly the trailing padding: the same input as alone
        assert.ok(maxDifference(scored.scores, alone.scores) < 1e-3, 'the widest line is read as with its trailing padding alone');
      }
    }
    const unpadded = await scoreCrops(session, { ...shipped, trailingPadding: 0 }, classes, [wide], gate);
    const without = await framesAlone(shipped, wide, 0, session);
    assert.ok(maxDifference(unpadded[0].scores, without.scores) < 1e-3, 'trailingPadding 0: the line as it is');
    assert.ok(
      maxDifference(unpadded[0].scores, batched[1].scores.subarray(0, unpadded[0].scores.length)) > 0.01,
      'the padding reaches the model: the last frames change with it',
    );
  } finally {
    await session.release();
  }
});

test('crops are cut batch by batch while the model runs the batch before, with the same frames as crops cut beforehand', async () => {
  const shipped = loadModelSpec(MODEL_DIR).recognition;
  const classes = loadCharacterClasses(shipped);
  const session = await createSession(shipped.file, 1);
  try {
    const { raster: image } = await prepareImageFile(MARGINAL_PAGE.imagePath, { name: 'marginal', maxPixels: 100_000_000 });
    const rects = (await groundTruthLines(MARGINAL_PAGE))
      .filter((line) => line.polygon.length >= 3)
      .map((line) => enclosingRectOfPoints(line.polygon, 0));
    const cutBeforehand = rects.map((rect) => cropLine(image, rect, shipped));
    const expected = await scoreCrops(session, shipped, classes, cutBeforehand, gate);

    // what happens, in order: a crop cut, a model run started or ended, a line's frames taken
    const events: string[] = [];
    const source: CropSource = {
      widths: rects.map((rect) => cropWidth(rect, shipped)),
      cut: (index) => {
        events.push(`cut ${index}`);
        return cropLine(image, rects[index], shipped);
      },
    };
    let runs = 0;
    const recordingGate = async <T>(task: () => Promise<T>): Promise<T> => {
      const run = runs++;
      events.push(`run ${run}`);
      try {
        return await task();
      } finally {
        events.push(`ran ${run}`);
      }
    };
    const scored = await scoreCrops(session, shipped, classes, source, recordingGate, (frames) => {
      events.push('take');
      return frames;
    });

    assert.ok(runs >= 3, `the page's ${rects.length} lines make several batches (${runs})`);
    assert.deepEqual(
      scored.map((frames) => frames.scores),
      expected.map((frames) => frames.scores),
      'the same frames, line by line',
    );
    assert.equal(events.filter((event) => event.startsWith('cut')).length, rects.length, 'each line cut once');
    for (let run = 0; run + 1 < runs; run += 1) {
      const started = events.indexOf(`run ${run}`);
      const nextQueued = events.indexOf(`run ${run + 1}`);
      const ended = events.indexOf(`ran ${run}`);
      assert.ok(started < nextQueued && nextQueued < ended, `batch ${run + 1} is cut and queued while batch ${run} runs`);
      const takenAfter = events.indexOf('take', ended);
      assert.ok(
        takenAfter !== -1 && takenAfter < events.indexOf(`ran ${run + 1}`),
        `batch ${run}'s frames are taken while batch ${run + 1} runs`,
      );
    }
  } finally {
    await session.release();
  }
});
