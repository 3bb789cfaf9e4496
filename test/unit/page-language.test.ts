// Choosing the language model for a page from its first (greedy) reading, with the
// shipped language model file of our handwriting recognizer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadCharNgramFile } from '../../src/pipeline/decoding/char-ngram-lm.ts';
import { lineLogLikelihood, mostLikelyLanguage } from '../../src/pipeline/decoding/page-language.ts';

const file = loadCharNgramFile(fileURLToPath(new URL('../../models/hwr-htr-v2/lm.json.gz', import.meta.url)));
const perLanguage = new Map([...file.models].filter(([name]) => name !== 'all'));

test('the shipped LM file has English and French models besides the joint one', () => {
  assert.deepEqual([...file.models.keys()].sort(), ['all', 'en', 'fr']);
});

test('a page read with many errors still gets its language', () => {
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
  assert.equal(mostLikelyLanguage(perLanguage, english), 'en');
  assert.equal(mostLikelyLanguage(perLanguage, french), 'fr');
  // blank lines do not count
  assert.equal(mostLikelyLanguage(perLanguage, ['', ...french, '  ']), 'fr');
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
