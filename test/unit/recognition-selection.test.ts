// The rule that shares a page's lines between the main and the screening recognizer
// (select-reading.ts), the manifest sections that set it up (screening, languageModel,
// borrowed sections), and RECOGNITION_DECODER.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/platform/config.ts';
import { loadCharNgramFile, PER_LANGUAGE_MODELS } from '../../src/recognition/decoding/char-ngram-lm.ts';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { builtinModelSpec, loadModelSpec } from '../../src/recognition/models/model-manifest.ts';
import type { SelectionSpec } from '../../src/recognition/models/model-spec.ts';
import {
  lineConfidence,
  mainReadingIsNoise,
  pageLooksPrinted,
  probeLines,
  probeSurelyPrinted,
  screeningReadsProbeBetter,
  screeningSuffices,
  screeningWins,
} from '../../src/recognition/reading/select-reading.ts';
import type { PlacedCharacter } from '../../src/recognition/reading/text-recognizer.ts';

const rule: SelectionSpec = { keepAbove: 0.8, margin: 0.2, probeLines: 3, dropBelow: 0.25, sureMargin: 0, printedAbove: null };

function read(text: string, confidence: number): PlacedCharacter[] {
  return [...text].map((character, index) => ({
    text: character,
    start: index,
    end: index + 1,
    confidence: character === ' ' ? 0.01 : confidence,
  }));
}

test('line confidence is the mean over the characters of all pieces, spaces excluded; nothing read is 0', () => {
  assert.equal(lineConfidence([read('ab', 0.9), read('c d', 0.6)]), (0.9 * 2 + 0.6 * 2) / 4);
  assert.equal(lineConfidence([[], []]), 0);
  assert.equal(lineConfidence([read('   ', 0.9)]), 0);
});

test('the probe is the widest lines, in page order', () => {
  assert.deepEqual(probeLines([100, 900, 300, 800, 50], 3), [1, 2, 3]);
  assert.deepEqual(probeLines([100, 200], 3), [0, 1]);
});

test('a page is printed when the screening confidence over its probe, character-weighted, reaches keepAbove', () => {
  assert.equal(pageLooksPrinted([[read('a long printed line', 0.95)], [read('x', 0.1)]], rule), true);
  assert.equal(pageLooksPrinted([[read('short', 0.95)], [read('a long handwritten line', 0.55)]], rule), false);
  assert.equal(pageLooksPrinted([[[]]], rule), false);
  assert.equal(pageLooksPrinted([[[]]], { ...rule, keepAbove: 0 }), false, 'nothing read is never print');
});

test('a page that looks printed is printed only when the screening recognizer reads the probe more surely than the main one', () => {
  // the three Copiste val pages PP-OCRv4 read at 0.86, which v3 reads at 0.90-0.95, and Stanford's typewritten letter
  const neatHand = [[read('une ligne bien écrite', 0.86)], [read('une autre', 0.86)]];
  assert.equal(pageLooksPrinted(neatHand, rule), true);
  assert.equal(screeningReadsProbeBetter(neatHand, [[read('une ligne bien écrite', 0.95)], [read('une autre', 0.9)]], rule), false);
  const typewritten = [[read('Dear Mrs. Stanford,', 0.996)]];
  assert.equal(screeningReadsProbeBetter(typewritten, [[read('Dear Mrs. Stanford,', 0.948)]], rule), true);
  assert.equal(screeningReadsProbeBetter(typewritten, [[[]]], rule), true, 'the main recognizer reading nothing is 0');
  assert.equal(screeningReadsProbeBetter(typewritten, [[read('Dear Mrs. Stanford,', 0.948)]], { ...rule, sureMargin: 0.1 }), false);
  assert.equal(screeningReadsProbeBetter(neatHand, [[read('x', 0.99)]], { ...rule, sureMargin: null }), true, 'null: no comparison');
});

test('a probe read surely enough is print without asking the main recognizer', () => {
  const sure = { ...rule, printedAbove: 0.95 };
  const typewritten = [[read('Dear Mrs. Stanford,', 0.996)], [read('Yours truly', 0.97)]];
  assert.equal(probeSurelyPrinted(typewritten, sure), true);
  // the character-weighted mean over the probe's lines, at the threshold itself
  const half = { ...rule, printedAbove: 0.75 };
  assert.equal(probeSurelyPrinted([[read('abc', 1)], [read('d', 0)]], half), true);
  assert.equal(probeSurelyPrinted([[read('abc', 1)], [read('de', 0)]], half), false);
  // neat handwriting PP-OCRv4 reads at 0.86-0.89 still goes to the main recognizer, and so does any probe without the setting
  assert.equal(probeSurelyPrinted([[read('une ligne bien écrite', 0.887)]], sure), false);
  assert.equal(probeSurelyPrinted(typewritten, rule), false);
  assert.equal(probeSurelyPrinted([[[]]], sure), false, 'a probe read as nothing');
});

test('a line the screening recognizer is sure of keeps its reading; on a printed page, so does a line it read nothing in', () => {
  const unchecked = { ...rule, sureMargin: null };
  assert.equal(screeningSuffices(0.85, false, unchecked), true);
  assert.equal(screeningSuffices(0.7, true, unchecked), false);
  assert.equal(screeningSuffices(0, true, unchecked), true);
  assert.equal(screeningSuffices(0, false, unchecked), false);
  // with sureMargin a handwritten page's sure lines go to the main recognizer too (screeningWins decides); printed pages as before
  assert.equal(screeningSuffices(0.95, false, rule), false);
  assert.equal(screeningSuffices(0.85, true, rule), true);
  assert.equal(screeningSuffices(0, true, rule), true);
});

test('between two readings the main one wins unless the screening one is surer by more than the margin, or sure and surer', () => {
  assert.equal(screeningWins(0.6, 0.55, rule), false);
  assert.equal(screeningWins(0.76, 0.55, rule), true);
  assert.equal(screeningWins(0.86, 0.8, rule), true, 'at keepAbove and surer than the main reading');
  assert.equal(screeningWins(0.86, 0.95, rule), false, 'at keepAbove, but the main reading is surer (sureMargin 0)');
  assert.equal(screeningWins(0.86, 0.95, { ...rule, sureMargin: null }), true, 'without sureMargin a sure reading stands');
  assert.equal(mainReadingIsNoise(0.2, rule), true);
  assert.equal(mainReadingIsNoise(0.3, rule), false);
});

let directory: string;

before(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'hwr-selection-'));
  await mkdir(path.join(directory, 'htr'));
  await writeFile(path.join(directory, 'htr', 'rec.onnx'), 'onnx');
  await writeFile(path.join(directory, 'htr', 'charset.txt'), 'a\nb\n \n');
  await writeFile(path.join(directory, 'htr', 'lm.json'), '{}');
  await writeFile(
    path.join(directory, 'htr', 'manifest.json'),
    JSON.stringify({
      format: 'hwr-model/1',
      name: 'hwr-htr',
      version: '7',
      detection: { model: 'builtin' },
      recognition: { file: 'rec.onnx', charset: 'charset.txt', inputHeight: 32, channels: 1, output: 'logits' },
      languageModel: { file: 'lm.json', format: 'hwr-char-ngram/1', alpha: 0.7 },
    }),
  );
});

after(() => rm(directory, { recursive: true, force: true }));

async function combined(manifest: unknown): Promise<string> {
  const dir = await mkdtemp(path.join(directory, 'combined-'));
  await writeFile(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

test('a manifest borrows the detector from the built-in model and the recognizer, with its LM, from another directory', async () => {
  const spec = loadModelSpec(
    await combined({
      format: 'hwr-model/1',
      name: 'both',
      version: '1',
      detection: { model: 'builtin' },
      recognition: { model: '../htr' },
      screening: { recognition: { model: 'builtin' }, keepAbove: 0.85, sureMargin: 0.05, printedAbove: 0.97 },
    }),
  );
  const builtin = builtinModelSpec();
  assert.equal(spec.detection.file, builtin.detection.file);
  assert.equal(spec.recognition.file, path.join(directory, 'htr', 'rec.onnx'));
  assert.deepEqual(spec.recognitionSource, { name: 'hwr-htr', version: '7' });
  assert.equal(spec.languageModel?.file, path.join(directory, 'htr', 'lm.json'));
  assert.deepEqual([spec.languageModel?.model, spec.languageModel?.alpha, spec.languageModel?.beam], ['all', 0.7, 10]);
  assert.ok(spec.screening);
  assert.equal(spec.screening.recognition.file, builtin.recognition.file);
  assert.equal(spec.screening.languageModel, null);
  assert.deepEqual(
    [spec.screening.keepAbove, spec.screening.margin, spec.screening.probeLines, spec.screening.dropBelow, spec.screening.sureMargin],
    [0.85, 0.2, 3, 0.25, 0.05],
  );
  assert.equal(spec.screening.printedAbove, 0.97);
  assert.equal(spec.screening.print, null, 'no print reader unless the section names one');
  assert.equal(builtin.screening, null);
  assert.equal(builtin.languageModel, null);
});

test('a screening section may name a print reader, borrowed with its language model or described in place', async () => {
  const base = {
    format: 'hwr-model/1',
    name: 'with-print',
    version: '2',
    detection: { model: 'builtin' },
    recognition: { model: '../htr' },
  };
  const borrowed = loadModelSpec(
    await combined({ ...base, screening: { recognition: { model: 'builtin' }, printRecognition: { model: '../htr' } } }),
  ).screening?.print;
  assert.ok(borrowed);
  assert.deepEqual(borrowed.source, { name: 'hwr-htr', version: '7' });
  assert.equal(borrowed.recognition.file, path.join(directory, 'htr', 'rec.onnx'));
  assert.deepEqual([borrowed.recognition.inputHeight, borrowed.recognition.output], [32, 'logits']);
  assert.equal(borrowed.languageModel?.file, path.join(directory, 'htr', 'lm.json'));

  const inPlace = loadModelSpec(
    await combined({
      ...base,
      screening: {
        recognition: { model: 'builtin' },
        printRecognition: { file: '../htr/rec.onnx', charset: '../htr/charset.txt', inputHeight: 40 },
      },
    }),
  ).screening?.print;
  assert.ok(inPlace);
  assert.deepEqual(inPlace.source, { name: 'with-print', version: '2' });
  assert.deepEqual(
    [path.basename(inPlace.recognition.file), inPlace.recognition.inputHeight, inPlace.languageModel],
    ['rec.onnx', 40, null],
  );
});

test('a missing borrowed directory, a loop and bad selection values are model_invalid, all reported at once', async () => {
  const dir = await combined({
    format: 'hwr-model/1',
    name: 'broken',
    version: '1',
    detection: { model: '.' },
    recognition: { model: '../nowhere' },
    screening: {
      recognition: { model: 'builtin' },
      printRecognition: { model: '../no-print-reader' },
      keepAbove: 2,
      probeLines: 0,
      sureMargin: 5,
      printedAbove: -0.5,
    },
  });
  assert.throws(
    () => loadModelSpec(dir),
    (error: unknown) => {
      assert.ok(error instanceof PipelineError);
      assert.equal(error.code, 'model_invalid');
      assert.match(error.message, /detection\.model: .* borrows in a loop/);
      assert.match(error.message, /recognition\.model "\.\.\/nowhere": .*has no manifest\.json/);
      assert.match(error.message, /screening\.keepAbove must be a number from 0 to 1/);
      assert.match(error.message, /screening\.sureMargin must be a number from -1 to 1/);
      assert.match(error.message, /screening\.printedAbove must be a number from 0 to 1/);
      assert.match(error.message, /screening\.probeLines must be a number from 1 to 1000/);
      assert.match(error.message, /screening\.printRecognition\.model "\.\.\/no-print-reader": .*has no manifest\.json/);
      return true;
    },
  );
});

test('RECOGNITION_DECODER chooses beam search (default) or greedy decoding', () => {
  assert.equal(loadConfig({}).recognition.decoder, 'beam');
  assert.equal(loadConfig({ RECOGNITION_DECODER: 'greedy' }).recognition.decoder, 'greedy');
  assert.throws(() => loadConfig({ RECOGNITION_DECODER: 'viterbi' }), /RECOGNITION_DECODER/);
});

test('only the language model a manifest names is built from an LM file', async () => {
  const stored = JSON.parse(await readFile(new URL('../fixtures/ctc-beam-search/tiny-lm.json', import.meta.url), 'utf8'));
  const file = path.join(directory, 'two-models.json');
  await writeFile(file, JSON.stringify({ ...stored, models: { all: stored.models.all, en: stored.models.all } }));
  assert.deepEqual([...loadCharNgramFile(file).models.keys()], ['all', 'en']);
  const one = loadCharNgramFile(file, 'en');
  assert.deepEqual([...one.models.keys()], ['en']);
  assert.equal(one.models.get('en')?.logProbability('th', 'e'), loadCharNgramFile(file).models.get('all')?.logProbability('th', 'e'));
  assert.equal(loadCharNgramFile(file, 'fr').models.size, 0);
});

test('model "auto" builds the per-language models of an LM file, not the joint one; the joint one when it is alone', async () => {
  const stored = JSON.parse(await readFile(new URL('../fixtures/ctc-beam-search/tiny-lm.json', import.meta.url), 'utf8'));
  const three = path.join(directory, 'three-models.json');
  await writeFile(three, JSON.stringify({ ...stored, models: { all: stored.models.all, en: stored.models.all, fr: stored.models.all } }));
  assert.deepEqual([...loadCharNgramFile(three, PER_LANGUAGE_MODELS).models.keys()], ['en', 'fr']);
  const alone = path.join(directory, 'joint-only.json');
  await writeFile(alone, JSON.stringify({ ...stored, models: { all: stored.models.all } }));
  assert.deepEqual([...loadCharNgramFile(alone, PER_LANGUAGE_MODELS).models.keys()], ['all']);
});
