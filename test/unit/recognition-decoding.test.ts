// From model output to words: CTC decoding, word spaces from ink gaps, word boxes,
// width batching.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { characterClasses } from '../../src/recognition/models/charset.ts';
import { decodeCtc } from '../../src/recognition/decoding/ctc-decode.ts';
import { insertGapSpaces } from '../../src/recognition/reading/gap-spaces.ts';
import { planBatches, type PlacedCharacter } from '../../src/recognition/reading/text-recognizer.ts';
import { wordsOf } from '../../src/recognition/reading/words.ts';

const classes = characterClasses('a\nb\n中\n', { blankIndex: 0, appendSpace: true }); // ['', a, b, 中, ' ']

/** One row per time step: the given class gets `p`, the rest share what is left. */
function scores(path: [number, number][]): Float32Array {
  const count = classes.symbols.length;
  const data = new Float32Array(path.length * count);
  path.forEach(([best, p], t) => {
    for (let k = 0; k < count; k += 1) data[t * count + k] = k === best ? p : (1 - p) / (count - 1);
  });
  return data;
}

test('greedy CTC: repeats collapse, blanks separate, each character keeps its span and best probability', () => {
  // a a _ a b b _ ' ' b
  const data = scores([
    [1, 0.9],
    [1, 0.6],
    [0, 0.99],
    [1, 0.8],
    [2, 0.7],
    [2, 0.95],
    [0, 0.9],
    [4, 0.85],
    [2, 0.5],
  ]);
  const decoded = decodeCtc(data, 0, classes.symbols.length, 9, classes, false);
  assert.deepEqual(
    decoded.map((character) => [character.text, character.start, character.end]),
    [
      ['a', 0, 2],
      ['a', 3, 4],
      ['b', 4, 6],
      [' ', 7, 8],
      ['b', 8, 9],
    ],
  );
  assert.ok(Math.abs(decoded[0].confidence - 0.9) < 1e-6);
  assert.ok(Math.abs(decoded[2].confidence - 0.95) < 1e-6);
});

test('logits are turned into probabilities; a Latin-only charset never emits other scripts', () => {
  const count = classes.symbols.length;
  const logits = new Float32Array([0, 5, 0, 0, 0, 0, 0, 0, 9, 0]); // t0: a, t1: 中
  const plain = decodeCtc(logits, 0, count, 2, classes, true);
  assert.deepEqual(
    plain.map((character) => character.text),
    ['a', '中'],
  );
  const expected = Math.exp(5) / (Math.exp(5) + 4);
  assert.ok(Math.abs(plain[0].confidence - expected) < 1e-6);
  const latin = characterClasses('a\nb\n中\n', { blankIndex: 0, appendSpace: true, restrictTo: 'latin' });
  assert.deepEqual(
    decodeCtc(logits, 0, count, 2, latin, true).map((character) => character.text),
    ['a'],
  );
});

test('the [time, batch, classes] layout is read through offset and stride', () => {
  const count = classes.symbols.length;
  // Two lines, two steps: t0 = [line0: a, line1: b], t1 = [line0: b, line1: a]
  const rows = [1, 2, 2, 1];
  const data = new Float32Array(rows.length * count);
  rows.forEach((best, row) => (data[row * count + best] = 1));
  const line = (slot: number) =>
    decodeCtc(data, slot * count, 2 * count, 2, classes, false)
      .map((character) => character.text)
      .join('');
  assert.equal(line(0), 'ab');
  assert.equal(line(1), 'ba');
});

/** An RGB crop of white paper with black ink in the given column ranges. */
function crop(width: number, height: number, ink: [number, number][]): Float32Array {
  const pixels = new Float32Array(width * height * 3).fill(250);
  for (const [from, to] of ink)
    for (let y = 4; y < height - 4; y += 1)
      for (let x = from; x < to; x += 1) pixels.fill(20, (y * width + x) * 3, (y * width + x) * 3 + 3);
  return pixels;
}

const placed = (text: string, start: number, end: number): PlacedCharacter => ({ text, start, end, confidence: 0.9 });

test('a wide blank stretch between two characters becomes a word space; a narrow one does not', () => {
  const pixels = crop(200, 48, [
    [10, 40],
    [44, 70], // 4 px gap: inside a word
    [100, 150], // 30 px gap: between words
  ]);
  const characters = [placed('a', 20, 30), placed('b', 50, 60), placed('c', 110, 120), placed('d', 130, 140)];
  const spaced = insertGapSpaces(characters, pixels, 200, 48, { minGap: 0.35 });
  assert.equal(spaced.map((character) => character.text).join(''), 'ab cd');
  // An existing space is not doubled.
  const withSpace = insertGapSpaces(
    [placed('a', 20, 30), placed('b', 50, 60), placed(' ', 80, 90), placed('c', 110, 120)],
    pixels,
    200,
    48,
    { minGap: 0.35 },
  );
  assert.equal(withSpace.map((character) => character.text).join(''), 'ab c');
  // A blank crop (no contrast) adds nothing.
  assert.equal(insertGapSpaces(characters, crop(200, 48, []), 200, 48, { minGap: 0.35 }).length, 4);
});

test('words split at spaces and reach halfway into the gaps, mapped through the crop frame', () => {
  const frame = { origin: [1000, 500] as const, ux: [2, 0] as const, uy: [0, 2] as const }; // crop pixel = 2 page pixels
  const words = wordsOf([placed('a', 10, 20), placed('b', 20, 30), placed(' ', 40, 50), placed('c', 60, 70)], frame, 100, 48);
  assert.deepEqual(
    words.map((word) => word.text),
    ['ab', 'c'],
  );
  // First word: crop 0 .. (30 + 60) / 2 = 45; second: 45 .. 100.
  assert.deepEqual(words[0].polygon, [
    [1000, 500],
    [1090, 500],
    [1090, 596],
    [1000, 596],
  ]);
  assert.deepEqual(words[1].polygon[1], [1200, 500]);
  assert.ok(Math.abs(words[0].confidence - 0.9) < 1e-9);
});

test('batches group lines of similar width, padded to a multiple of the stride', () => {
  const widths = [100, 130, 3000, 120, 500, 90, 2100];
  const batches = planBatches(
    widths.map((width) => ({ width })),
    8,
  );
  // Every line in exactly one batch.
  assert.deepEqual(batches.flatMap((batch) => batch.indices).sort(), [0, 1, 2, 3, 4, 5, 6]);
  for (const batch of batches) {
    const batchWidths = batch.indices.map((index) => widths[index]);
    assert.equal(batch.width % 8, 0);
    assert.ok(batch.width >= Math.max(...batchWidths));
    assert.ok(Math.max(...batchWidths) <= 1.35 * Math.min(...batchWidths) + 8);
  }
  assert.deepEqual(
    batches.map((batch) => batch.indices),
    // 90, 100, 120 | 130 (over 1.35 x 90) | 500 | 2100 | 3000 (each over the column budget with another)
    [[5, 0, 3], [1], [4], [6], [2]],
  );
});
