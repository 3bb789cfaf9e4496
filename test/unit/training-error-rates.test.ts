// The figures a trained model is offered with (src/recognition/training/error-rates.ts): CER and
// WER over held-out lines, and the margin a gain must clear to be more than chance on few lines.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cerMargin, errorRate, scoreEachLine, sumScores } from '../../src/recognition/training/error-rates.ts';

test('character and word errors per line, summed over lines and divided by the ground truth', () => {
  const lines = scoreEachLine([
    { read: 'the quick brwn fox', truth: 'the quick brown fox' },
    { read: '  jumps  over ', truth: 'jumps over' },
    { read: '', truth: 'ſo' },
  ]);
  assert.deepEqual(
    lines.map((line) => line.characters),
    [
      { errors: 1, length: 19 },
      { errors: 0, length: 10 },
      { errors: 2, length: 2 },
    ],
  );
  assert.deepEqual(
    lines.map((line) => line.words),
    [
      { errors: 1, length: 4 },
      { errors: 0, length: 2 },
      { errors: 1, length: 1 },
    ],
  );
  const total = sumScores(lines);
  assert.equal(errorRate(total.characters), 3 / 31);
  assert.equal(errorRate(total.words), 2 / 7);
  assert.equal(errorRate({ errors: 0, length: 0 }), 0);
});

test('the margin: z standard errors of the summed per-line differences, as a share of the characters', () => {
  const line = (errors: number, length = 50) => ({ characters: { errors, length }, words: { errors: 0, length: 10 } });
  const before = [line(10), line(12), line(8), line(10)];
  // Every line 5 errors better: no spread, so any gain is beyond chance.
  assert.equal(cerMargin(before, [line(5), line(7), line(3), line(5)], 1.645), 0);
  // Differences -4, +4, -4, +4: mean 0, sample variance 64/3; the sum's standard error sqrt(4 * 64 / 3).
  const mixed = [line(6), line(16), line(4), line(14)];
  assert.ok(Math.abs(cerMargin(before, mixed, 1) - Math.sqrt((4 * 64) / 3) / 200) < 1e-12);
  assert.ok(Math.abs(cerMargin(before, mixed, 2) - 2 * cerMargin(before, mixed, 1)) < 1e-12);
  // One line says nothing of the spread.
  assert.equal(cerMargin([line(10)], [line(2)], 1.645), 0);
});
