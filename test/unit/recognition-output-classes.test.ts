// A recognizer's output cut to the classes its decoding may choose (src/recognition/models/graph/
// keep-output-classes.ts): PP-OCRv4, as shipped, on a line of a real printed page, hands over
// exactly the probabilities of the allowed classes, and a LineRecognizer reads the line with the
// same characters and confidences as from the whole output; what cannot be cut is refused.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { decodeCtc } from '../../src/recognition/decoding/ctc-decode.ts';
import type { RgbImage } from '../../src/recognition/image/raster.ts';
import { allowedClasses, characterClasses, loadCharacterClasses } from '../../src/recognition/models/charset.ts';
import { fuseElementwiseChains, fuseGraphChains } from '../../src/recognition/models/graph/fuse-elementwise.ts';
import { cutOutputClasses, keepOutputClasses } from '../../src/recognition/models/graph/keep-output-classes.ts';
import { OnnxGraph, OnnxGraphError } from '../../src/recognition/models/graph/onnx-graph.ts';
import { builtinModelSpec } from '../../src/recognition/models/model-manifest.ts';
import { LineRecognizer } from '../../src/recognition/reading/line-recognizer.ts';

const spec = builtinModelSpec();
const PAGE = path.join(import.meta.dirname, '../fixtures/pages/fondue_en_print_dracula_page_51.png');
/** The page's first text line (its ALTO box: 368, 299, 1813 x 69). */
const LINE = { left: 360, top: 290, width: 1830, height: 86 };

/** The line at the model's height, normalised as PP-OCRv4 takes it (BGR, (v / 255 - 0.5) / 0.5), NCHW. */
async function lineInput(): Promise<ort.Tensor> {
  const width = 1024;
  const height = 48;
  const { data } = await sharp(PAGE)
    .removeAlpha()
    .extract(LINE)
    .resize(width, height, { fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const input = new Float32Array(3 * width * height);
  for (let i = 0; i < width * height; i += 1)
    for (let c = 0; c < 3; c += 1) input[c * width * height + i] = ((data[i * 3 + (2 - c)] as number) / 255 - 0.5) / 0.5;
  return new ort.Tensor('float32', input, [1, 3, height, width]);
}

async function run(model: Uint8Array, input: ort.Tensor): Promise<ort.Tensor> {
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  try {
    return (await session.run({ [session.inputNames[0] as string]: input }))[session.outputNames[0] as string] as ort.Tensor;
  } finally {
    await session.release();
  }
}

test('the classes PP-OCRv4 may choose for Latin text: the blank first, the space among them, nothing else allowed', () => {
  const all = loadCharacterClasses(spec.recognition);
  assert.equal(all.symbols.length, 6625);
  const allowed = allowedClasses(all);
  assert.ok(allowed);
  assert.equal(allowed.indices.length, allowed.classes.symbols.length);
  assert.equal(
    allowed.classes.symbols.length,
    all.allowed?.reduce((sum, flag) => sum + flag, 0),
  );
  assert.equal(allowed.classes.blank, 0);
  assert.equal(allowed.classes.symbols[allowed.classes.space], ' ');
  assert.equal(allowed.classes.allowed, null);
  assert.ok(allowed.classes.symbols.includes('A') && allowed.classes.symbols.includes('é') && !allowed.classes.symbols.includes('的'));
  assert.deepEqual(
    allowed.indices.map((index) => all.symbols[index]),
    allowed.classes.symbols,
  );
  // a model without a restriction, and a blank at the end
  assert.equal(allowedClasses(characterClasses('a\nb\n', { appendSpace: false, blankIndex: 0 })), null);
  const last = allowedClasses(characterClasses('a\n的\nb\n', { appendSpace: true, blankIndex: 'last', restrictTo: 'latin' }));
  assert.deepEqual(last?.classes, { symbols: ['a', 'b', ' ', ''], blank: 3, space: 2, allowed: null });
  assert.deepEqual(last?.indices, [0, 2, 3, 4]);
});

test("the cut model hands over the allowed classes' probabilities to the bit, fused or not", async () => {
  const all = loadCharacterClasses(spec.recognition);
  const allowed = allowedClasses(all);
  assert.ok(allowed);
  const input = await lineInput();
  const original = readFileSync(spec.recognition.file);
  const fused = fuseElementwiseChains(original)?.bytes;
  assert.ok(fused);
  for (const model of [original, fused]) {
    const whole = await run(model, input);
    const cut = await run(keepOutputClasses(model, allowed.indices), input);
    const [batch, frames, classes] = whole.dims as [number, number, number];
    assert.deepEqual(cut.dims, [batch, frames, allowed.indices.length]);
    const wholeData = whole.data as Float32Array;
    const cutData = cut.data as Float32Array;
    for (let t = 0; t < frames; t += 1)
      allowed.indices.forEach((index, k) => assert.equal(cutData[t * allowed.indices.length + k], wholeData[t * classes + index]));
    // greedy decoding: the same characters, spans and confidences
    const fromWhole = decodeCtc(wholeData, 0, classes, frames, all, false);
    const fromCut = decodeCtc(cutData, 0, allowed.indices.length, frames, allowed.classes, false);
    assert.ok(fromWhole.length > 20, 'the line is read as text');
    assert.deepEqual(fromCut, fromWhole);
  }
  // the rewrite adds one Gather and one initializer; the graph keeps its single output name
  const graph = OnnxGraph.decode(keepOutputClasses(original, allowed.indices));
  assert.deepEqual(graph.outputNames(), OnnxGraph.decode(original).outputNames());
  assert.equal(graph.nodes.at(-1)?.opType, 'Gather');
  // the inference worker fuses and cuts one decoded graph: the same bytes as the two rewrites one after the other
  const once = OnnxGraph.decode(original);
  assert.ok(fuseGraphChains(once));
  cutOutputClasses(once, allowed.indices);
  assert.ok(Buffer.from(once.encode()).equals(Buffer.from(keepOutputClasses(fused, allowed.indices))));
});

test('a LineRecognizer of PP-OCRv4 reads the line from the cut output, and keeps no frames (a model of 6 625 classes)', async () => {
  const { data, info } = await sharp(PAGE).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const image: RgbImage = { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  const recognizer = await LineRecognizer.load({
    source: { name: spec.name, version: spec.version },
    recognition: spec.recognition,
    languageModel: null,
    decoder: 'greedy',
    threads: 1,
  });
  try {
    const rect = { cx: 368 + 1813 / 2, cy: 299 + 69 / 2, width: 1813, height: 69, angle: 0 };
    const [piece] = await recognizer.read(image, [rect], (task) => task());
    assert.ok(piece);
    const text = piece.characters.map((character) => character.text).join('');
    assert.match(text, /[A-Za-z]{3,}/);
    assert.equal(piece.frames, undefined);
  } finally {
    await recognizer.close();
  }
});

test('a model with more than one output, or an output no operator writes, is refused', () => {
  const twoOutputs = modelWith(['y', 'z']);
  assert.throws(() => keepOutputClasses(twoOutputs, [0, 1]), OnnxGraphError);
  assert.throws(() => keepOutputClasses(modelWith(['x']), [0]), /no operator writes/);
});

/** A model of one Identity (x → y) whose graph declares `outputs`. */
function modelWith(outputs: string[]): Uint8Array {
  const text = (field: number, value: string) => [...framed(field, new TextEncoder().encode(value))];
  const node = framed(1, Uint8Array.from([...text(1, 'x'), ...text(2, 'y'), ...text(4, 'Identity')]));
  const declared = outputs.flatMap((name) => [...framed(12, Uint8Array.from(text(1, name)))]);
  const graph = Uint8Array.from([...node, ...declared]);
  return Uint8Array.from([8, 8, ...framed(7, graph)]);
}

/** A length-delimited protobuf field (lengths under 128). */
function framed(field: number, payload: Uint8Array): Uint8Array {
  assert.ok(payload.length < 128);
  return Uint8Array.from([field * 8 + 2, payload.length, ...payload]);
}
