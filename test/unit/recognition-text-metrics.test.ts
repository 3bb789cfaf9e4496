// The scoring used by `npm run eval` (bench/lib/text-metrics.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ConfidenceBins,
  characterErrors,
  editDistance,
  errorRate,
  normaliseText,
  rightCharacters,
  scorePage,
  scoringText,
  wordErrors,
} from '../../bench/lib/text-metrics.ts';

test('normalisation reproduces the datasets text_norm column (pairs taken from htr-lines)', () => {
  // [text, text_norm] exactly as in ../shared/datasets/htr-lines/{train,val}.tsv
  const pairs: [string, string][] = [
    ['You ask for names and adresse⟦s⟧ of the proper officers of the', 'You ask for names and adresses of the proper officers of the'],
    ['Thos. B. M^c Farland - will not', 'Thos. B. Mc Farland - will not'],
    ['<> <> <>', ''],
    ['Maolsheachlainn mac >Aodba< Aodha (mort en 1488)', 'Maolsheachlainn mac Aodba Aodha (mort en 1488)'],
    ['Gerolamo ou Girolamo ou ><', 'Gerolamo ou Girolamo ou'],
    ['Notre-Dame-de->Cery<>Cerry< Cenilly', 'Notre-Dame-de-Cery Cerry Cenilly'],
    ['Monoplan à poste ouvert, ail><e', 'Monoplan à poste ouvert, ail e'],
    ['a>0{-displaystyle a>0}, b<0{-displaystyle b<0} et', 'a>0{-displaystyle a0}, b0{-displaystyle b<0} et'],
    ['discrète de paramètre s>1{-display s>1}.', 'discrète de paramètre s>1{-display s>1}.'],
    ['thinks his well--spent life suitably', 'thinks his well-spent life suitably'],
    ['de tout ce qui m’appartien.', "de tout ce qui m'appartien."],
    ['ouvrages dits « sanctionnants » :', 'ouvrages dits " sanctionnants ":'],
    ['C\'est un enfer !"—  Il a, avant de repartir, préparé', 'C\'est un enfer!"- Il a, avant de repartir, préparé'],
    ['right ( back in India & organizing his', 'right (back in India & organizing his'],
    [' With best love to Harriet &', 'With best love to Harriet &'],
    ['Nowy Szczeglin (prononciation : [-n-v- -t-lin]) est', 'Nowy Szczeglin (prononciation: [-n-v- -t-lin]) est'],
  ];
  for (const [text, expected] of pairs) assert.equal(normaliseText(text), expected, text);
});

test('historical print glyphs fold to their modern letters', () => {
  assert.equal(normaliseText('Monatsſchrift'), 'Monatsschrift');
  assert.equal(normaliseText('daꝛ'), 'dar');
  assert.equal(normaliseText('Aufklaͤrung uͤber'), 'Aufklärung über');
});

test('edit distance, CER and WER', () => {
  assert.equal(editDistance([...'kitten'], [...'sitting']), 3);
  assert.equal(editDistance([], [...'abc']), 3);
  assert.deepEqual(characterErrors('the cat', 'the hat'), { errors: 1, length: 7 });
  assert.deepEqual(wordErrors('the cat sat', 'the hat sat down'), { errors: 2, length: 4 });
  // Code points, not UTF-16 units: one error for one astral character.
  assert.deepEqual(characterErrors('a𝔄b', 'aXb'), { errors: 1, length: 3 });
  assert.equal(errorRate({ errors: 1, length: 10 }, { errors: 3, length: 30 }), 0.1);
  assert.equal(errorRate({ errors: 0, length: 0 }), 0);
  assert.equal(errorRate({ errors: 2, length: 0 }), 1);
});

test('a page is scored as its normalised lines joined by spaces', () => {
  assert.equal(scoringText(['  First line ', '', 'second -- line !']), 'First line second - line!');
  const score = scorePage(['Dear Sir', 'I have'], ['Dear Sir:', 'I have']);
  assert.deepEqual(score.characters, { errors: 1, length: 16 });
  assert.deepEqual(score.words, { errors: 1, length: 4 });
});

test('right characters: each read character matched to the same reference character by a minimal alignment', () => {
  assert.deepEqual(rightCharacters([...'letter'], [...'lettor']), [true, true, true, true, false, true]);
  assert.deepEqual(
    rightCharacters([...'lettre'], [...'lettres']),
    [true, true, true, true, true, true, false],
    'an insertion is not right',
  );
  assert.deepEqual(rightCharacters([...'abc'], [...'ac']), [true, true], 'a deletion costs no read character');
  assert.deepEqual(rightCharacters([], [...'ab']), [false, false]);
});

test('confidence bins: mean confidence, share right and the weighted gap between them per bin', () => {
  const bins = new ConfidenceBins();
  bins.add(0.95, 9, 10); // 10 characters at 0.95, 9 right
  bins.add(0.5, 1, 2); // 2 characters at 0.5, 1 right
  assert.equal(bins.weight, 12);
  assert.ok(Math.abs(bins.meanConfidence - (9.5 + 1) / 12) < 1e-12);
  assert.equal(bins.shareRight, 10 / 12);
  assert.ok(Math.abs(bins.ece - 0.5 / 12) < 1e-12, 'bin 0.9: |9.5 - 9|, bin 0.5: |1 - 1|');
  const other = new ConfidenceBins();
  other.add(1, 1);
  bins.merge(other);
  assert.equal(bins.weight, 13);
});
