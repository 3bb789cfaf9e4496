// Choosing the language model for a page from its first (greedy) reading, with the
// shipped language model files of our handwriting recognizers (v3's Kneser-Ney 6-gram, v2's
// Witten-Bell 5-gram).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadCharNgramFile } from '../../src/recognition/decoding/char-ngram-lm.ts';
import { lineLogLikelihood, mostLikelyLanguage } from '../../src/recognition/decoding/page-language.ts';

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
