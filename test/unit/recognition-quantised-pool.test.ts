// An 8-bit model's first max pool run channels-last on its 8-bit values
// (src/recognition/models/graph/pool-quantised.ts): the shipped 8-bit recognizer reads a real line
// to the bit as before, in onnxruntime; hand-built models show which pools are rewritten and that
// the outputs do not change; the float32 recognizer and PP-OCRv4 have no such pool.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { OnnxGraph } from '../../src/recognition/models/graph/onnx-graph.ts';
import { poolQuantisedValues } from '../../src/recognition/models/graph/pool-quantised.ts';
import { builtinModelSpec } from '../../src/recognition/models/model-manifest.ts';
import { floatInitializer, intsAttribute, modelOf, nodeField, valueInfo } from '../support/onnx-models.ts';

const MODELS = path.join(import.meta.dirname, '../../models/hwr-htr-v3');
const PAGE = path.join(import.meta.dirname, '../fixtures/pages/peraire_test_B.12.japon3_0048.jpg');

function rewritten(bytes: Uint8Array): { bytes: Uint8Array; count: number; ops: string[] } {
  const graph = OnnxGraph.decode(bytes);
  const count = poolQuantisedValues(graph);
  return { bytes: graph.encode(), count, ops: graph.nodes.map((node) => node.opType) };
}

async function outputOf(model: Uint8Array, input: ort.Tensor): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
  try {
    const outputs = await session.run({ [session.inputNames[0] as string]: input });
    return outputs[session.outputNames[0] as string]?.data as Float32Array;
  } finally {
    await session.release();
  }
}

test('the 8-bit recognizer: its first pool goes channels-last in 8 bits, and a real line reads the same to the bit', async () => {
  const manifest = JSON.parse(readFileSync(path.join(MODELS, 'manifest.json'), 'utf8'));
  const original = readFileSync(path.join(MODELS, manifest.recognition.file));
  const result = rewritten(original);
  assert.equal(result.count, 1);
  assert.equal(result.ops.filter((op) => op === 'com.microsoft::NhwcMaxPool').length, 1);
  assert.equal(
    OnnxGraph.decode(original).nodes.filter((node) => node.opType === 'MaxPool').length - 1,
    result.ops.filter((op) => op === 'MaxPool').length,
  );

  // Two lines of handwriting from a fixture page at the model's height, normalised as its manifest says.
  const height = manifest.recognition.inputHeight as number;
  const width = 480;
  const lines = await Promise.all(
    [340, 670].map((top) =>
      sharp(PAGE)
        .extract({ left: 1000, top, width: 1800, height: 170 })
        .greyscale()
        .resize(width, height, { fit: 'fill' })
        .raw()
        .toBuffer(),
    ),
  );
  const [mean, std] = [manifest.recognition.mean[0] as number, manifest.recognition.std[0] as number];
  const input = new Float32Array(2 * height * width);
  lines.forEach((line, n) => line.forEach((value, i) => (input[n * height * width + i] = (value / 255 - mean) / std)));
  const tensor = () => new ort.Tensor('float32', input.slice(), [2, 1, height, width]);
  const before = await outputOf(original, tensor());
  const after = await outputOf(result.bytes, tensor());
  assert.equal(after.length, before.length);
  assert.ok(
    before.every((value, i) => Object.is(value, after[i])),
    'every logit is the same',
  );
});

test('models without an 8-bit pool of float values are left alone', () => {
  for (const file of [path.join(MODELS, 'rec.onnx'), builtinModelSpec().recognition.file, builtinModelSpec().detection.file])
    assert.equal(rewritten(readFileSync(file)).count, 0, path.basename(file));
});

/** x (1 x 4 x 6 x 8) → MaxPool 2 x 2 → QuantizeLinear → DequantizeLinear → y, with the variations named. */
function poolModel(variant: 'plain' | 'padded' | 'negative scale' | 'read twice' | 'dequantised input'): Uint8Array {
  const pads = variant === 'padded' ? [1, 1, 1, 1] : [0, 0, 0, 0];
  const outSide = variant === 'padded' ? [4, 5] : [3, 4];
  const source = variant === 'dequantised input' ? 'xd' : 'x';
  const graph = [
    ...(variant === 'dequantised input'
      ? [nodeField('QuantizeLinear', ['x', 'in_scale'], ['xq']), nodeField('DequantizeLinear', ['xq', 'in_scale'], ['xd'])]
      : []),
    nodeField(
      'MaxPool',
      [source],
      ['pooled'],
      [intsAttribute('kernel_shape', [2, 2]), intsAttribute('strides', [2, 2]), intsAttribute('pads', pads)],
    ),
    nodeField('QuantizeLinear', ['pooled', 'scale'], ['q']),
    nodeField('DequantizeLinear', ['q', 'scale'], ['y']),
    ...(variant === 'read twice' ? [nodeField('Neg', ['pooled'], ['side'])] : []),
    floatInitializer('scale', [], [variant === 'negative scale' ? -0.1 : 0.1]),
    floatInitializer('in_scale', [], [0.04]),
    valueInfo(11, 'x', [1, 4, 6, 8]),
    valueInfo(12, 'y', [1, 4, ...outSide]),
    ...(variant === 'read twice' ? [valueInfo(12, 'side', [1, 4, ...outSide])] : []),
  ];
  return modelOf(graph, 13);
}

test('a pool quantised after it is rewritten and gives the same values; the cases where that would not hold are left', async () => {
  const model = poolModel('plain');
  const result = rewritten(model);
  assert.equal(result.count, 1);
  assert.deepEqual(result.ops, ['QuantizeLinear', 'Transpose', 'com.microsoft::NhwcMaxPool', 'Transpose', 'DequantizeLinear']);
  for (let trial = 0; trial < 5; trial += 1) {
    // values from below 0 (clamped to 0) to 170 steps, with ties
    const x = Float32Array.from({ length: 4 * 6 * 8 }, (_, i) => Math.round(Math.sin(i * 1.3 + trial) * 10) * 1.5 + 2);
    const before = await outputOf(model, new ort.Tensor('float32', x.slice(), [1, 4, 6, 8]));
    assert.ok(new Set(before).size > 5, 'the pool picks varied values');
    assert.deepEqual(await outputOf(result.bytes, new ort.Tensor('float32', x.slice(), [1, 4, 6, 8])), before);
  }
  for (const variant of ['padded', 'negative scale', 'read twice', 'dequantised input'] as const)
    assert.equal(rewritten(poolModel(variant)).count, 0, variant);
});
