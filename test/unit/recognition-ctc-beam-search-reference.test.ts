// The beam search keeps its prefixes in a trie and its beams in typed arrays, ranks them without
// sorting and makes an emission an object only for a prefix a frame keeps (issue 43: most of a
// page's garbage). It must read exactly as the first, plain implementation did
// (test/support/ctc-beam-search-reference.ts): the same characters, timings, confidences, shares and
// runners-up, to the bit, on frames that exercise ties, repeated characters, spaces with known
// words, more likely classes than candidates and more prefixes than the beam.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_BEAM_SEARCH, type BeamSearchOptions } from '../../src/recognition/models/beam-search-options.ts';
import { loadCharNgramFile, type CharNgramModel } from '../../src/recognition/decoding/char-ngram-lm.ts';
import { beamSearchCtcReadings } from '../../src/recognition/decoding/ctc-beam-search.ts';
import { characterClasses } from '../../src/recognition/models/charset.ts';
import { mulberry32 } from '../../bench/lib/seeded-random.ts';
import { referenceBeamSearch } from '../support/ctc-beam-search-reference.ts';

const fixtures = new URL('../fixtures/ctc-beam-search/', import.meta.url);
const lm = loadCharNgramFile(new URL('tiny-lm.json', fixtures).pathname).models.get('all') as CharNgramModel;
// the tiny LM's letters, a space (appended) and the blank at 0
const classes = characterClasses(`${[..."'abcdefghiklnopqrstuwxyé"].join('\n')}\n`, { appendSpace: true, blankIndex: 0 });
const count = classes.symbols.length;
const knownWords = new Set(['the', 'a', 'sur', 'et', 'qu', 'de', 'la']);

/**
 * Frames like a recognizer's: mostly blank, a character over a few frames, sometimes two or three
 * classes close (ambiguous writing), sometimes exactly equal scores (ties), as raw scores (logits).
 */
function frames(seed: number, steps: number): Float32Array {
  const next = mulberry32(seed);
  const data = new Float32Array(steps * count);
  let held = -1;
  for (let t = 0; t < steps; t += 1) {
    const row = data.subarray(t * count, (t + 1) * count);
    for (let k = 0; k < count; k += 1) row[k] = -6 + next() * 3;
    const roll = next();
    if (roll < 0.45) {
      row[classes.blank] = 4 + next() * 2;
      held = -1;
    } else {
      const character = held >= 0 && next() < 0.5 ? held : 1 + Math.floor(next() * (count - 1));
      row[character] = 3 + next() * 2;
      row[classes.blank] = 1 + next() * 2;
      if (next() < 0.35) row[1 + Math.floor(next() * (count - 1))] = row[character] - next() * 0.8;
      if (next() < 0.15) row[1 + Math.floor(next() * (count - 1))] = row[character];
      if (next() < 0.2) row[classes.space] = 2 + next() * 2;
      held = character;
    }
  }
  return data;
}

const settings: [string, BeamSearchOptions][] = [
  ['the default search', DEFAULT_BEAM_SEARCH],
  ['a narrow beam, few candidates, known words', { beam: 3, alpha: 0.7, beta: 1.5, prune: 1e-3, maxCandidates: 2, wordBonus: 1 }],
  ['a beam of one', { beam: 1, alpha: 1, beta: 2.5, prune: 1e-2, maxCandidates: 12, wordBonus: 0 }],
  ["the hwr-htr-v3 manifest's search", { beam: 30, alpha: 1, beta: 2.5, prune: 1e-3, maxCandidates: 12, wordBonus: 1 }],
];

test('the beam search reads exactly as the plain reference implementation, runners-up and shares included', () => {
  let lines = 0;
  for (const [name, options] of settings)
    for (let seed = 1; seed <= 40; seed += 1) {
      const steps = 20 + (seed % 7) * 15;
      const scores = frames(seed * 7919 + options.beam, steps);
      for (const withLm of [true, false]) {
        const model = withLm ? lm : null;
        const expected = referenceBeamSearch(scores, 0, count, steps, classes, true, model, options, knownWords, 12);
        const actual = beamSearchCtcReadings(scores, 0, count, steps, classes, true, model, options, knownWords, 12);
        assert.deepEqual(actual, expected, `${name}, seed ${seed}, ${withLm ? 'with' : 'without'} the language model`);
        lines += 1;
      }
    }
  assert.equal(lines, 320);
});

test('it reads probabilities (not logits) and a line of only blanks as the reference does', () => {
  const steps = 30;
  const scores = frames(99, steps);
  for (let t = 0; t < steps; t += 1) {
    const row = scores.subarray(t * count, (t + 1) * count);
    let sum = 0;
    for (let k = 0; k < count; k += 1) sum += Math.exp(row[k]);
    for (let k = 0; k < count; k += 1) row[k] = Math.exp(row[k]) / sum;
  }
  const blanks = new Float32Array(10 * count);
  for (let t = 0; t < 10; t += 1) blanks[t * count + classes.blank] = 1;
  for (const [data, length] of [
    [scores, steps],
    [blanks, 10],
  ] as const) {
    const expected = referenceBeamSearch(data, 0, count, length, classes, false, lm, DEFAULT_BEAM_SEARCH, knownWords, 5);
    assert.deepEqual(beamSearchCtcReadings(data, 0, count, length, classes, false, lm, DEFAULT_BEAM_SEARCH, knownWords, 5), expected);
  }
  assert.notEqual(
    referenceBeamSearch(scores, 0, count, steps, classes, false, lm, DEFAULT_BEAM_SEARCH, knownWords, 5).characters.length,
    0,
  );
});
