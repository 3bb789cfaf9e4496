// Choosing the language model for a page from its first (greedy) reading, with the
// shipped language model files of our handwriting recognizers (v3's Kneser-Ney 6-gram, v2's
// Witten-Bell 5-gram), and the shipped recognizer reading a real page's lines with the page
// text read before them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadCharNgramFile } from '../../src/recognition/decoding/char-ngram-lm.ts';
import { lineLogLikelihood, mostLikelyLanguage } from '../../src/recognition/decoding/page-language.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import { defaultModelSpec } from '../../src/recognition/models/default-model.ts';
import { AUTO_LANGUAGE } from '../../src/recognition/models/model-spec.ts';
import { LineRecognizer, type PieceRead } from '../../src/recognition/reading/line-recognizer.ts';

const fixture = (name: string) => path.resolve(import.meta.dirname, '../fixtures', name);

const shipped = (model: string) => loadCharNgramFile(fileURLToPath(new URL(`../../models/${model}/lm.bin.gz`, import.meta.url)));
const file = shipped('hwr-htr-v2');
const files = [file, shipped('hwr-htr-v3')];

test('the shipped LM files have English and French models besides the joint one', () => {
  for (const lm of files) assert.deepEqual([...lm.models.keys()].sort(), ['all', 'en', 'fr']);
});

test('a page read with many errors still gets its language, under either LM file', () => {
  // greedy readings as our recognizer produces them on handwriting: a third of the letters wrong
  const english = [
    'My dear Hooker I am vcry glad to hcar that yon are bettcr',
    'and that the plants arrivcd safc at Kew',
    'ever yours truly',
  ];
  const french = [
    'Mon cher ami je vons ecris de Pekin ou nous sommcs arrivcs',
    'la ville est tres grandc et les rucs sont',
    'je vous embrasse',
  ];
  for (const lm of files) {
    const perLanguage = new Map([...lm.models].filter(([name]) => name !== 'all'));
    assert.equal(mostLikelyLanguage(perLanguage, english), 'en');
    assert.equal(mostLikelyLanguage(perLanguage, french), 'fr');
    // blank lines do not count
    assert.equal(mostLikelyLanguage(perLanguage, ['', ...french, '  ']), 'fr');
  }
});

test('the likelihood of a line is the sum of its characters and its end, as the beam search scores it', () => {
  const model = file.models.get('en');
  assert.ok(model);
  const text = 'the';
  const expected =
    model.logProbability('', 't') +
    model.logProbability('t', 'h') +
    model.logProbability('th', 'e') +
    model.logProbability('the', model.boundary);
  assert.ok(Math.abs(lineLogLikelihood(model, text) - expected) < 1e-12);
  assert.ok(lineLogLikelihood(model, 'the house') > lineLogLikelihood(model, 'xqz hvkjw'));
});

test('lines read with the page text read before them take the language of the whole page', async () => {
  // On a printed page the main recognizer reads only the lines the screening is unsure of,
  // sometimes one short line; the screening's sure lines count in its choice of language model.
  const spec = defaultModelSpec();
  const languageModel = spec.languageModel;
  assert.ok(languageModel && languageModel.model === AUTO_LANGUAGE, 'the default recognizer chooses its language model per page');
  const { raster } = await prepareImage(readFileSync(fixture('pages/copiste_wikitexte_0219_2.jpg')), {
    name: 'copiste',
    maxPixels: 100_000_000,
  });
  const engine = await OcrEngine.load(spec, { threads: 2, concurrency: 1, decoder: 'beam' });
  const recognizers = await Promise.all(
    [AUTO_LANGUAGE, 'en', 'fr'].map((model) =>
      LineRecognizer.load({
        source: spec.recognitionSource,
        recognition: spec.recognition,
        languageModel: { ...languageModel, model },
        decoder: 'beam',
        threads: 2,
      }),
    ),
  );
  try {
    const lines = (await engine.layout(raster)).flatMap((region) => region.lines);
    // three lines of the French page: too few to stand for a page, enough to read differently by language
    const pieces = lines.slice(0, 3).map((line) => line.fragments[0]);
    const gate = <T>(run: () => Promise<T>): Promise<T> => run();
    const [auto, english, french] = recognizers;
    const text = async (reading: Promise<PieceRead[]>) =>
      (await reading).map((piece) => piece.characters.map((character) => character.text).join(''));
    const asEnglish = await text(english.read(raster, pieces, gate));
    const asFrench = await text(french.read(raster, pieces, gate));
    assert.notDeepEqual(asEnglish, asFrench, 'the two language models read these lines differently');
    assert.deepEqual(await text(auto.read(raster, pieces, gate)), asFrench, 'alone, the lines are French');
    const englishPage = readFileSync(fixture('correction/hooker_JDH_2_16_144_002.gt.txt'), 'utf8').split('\n');
    assert.deepEqual(await text(auto.read(raster, pieces, gate, undefined, 'beam', englishPage)), asEnglish);
    const frenchPage = readFileSync(fixture('pages/peraire_test_B.12.japon3_0048.gt.txt'), 'utf8').split('\n');
    assert.deepEqual(await text(auto.read(raster, pieces, gate, undefined, 'beam', frenchPage)), asFrench);
  } finally {
    await Promise.all([engine.close(), ...recognizers.map((recognizer) => recognizer.close())]);
  }
});
