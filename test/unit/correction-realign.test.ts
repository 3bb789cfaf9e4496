import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Box, TextLine, Word } from '../../src/recognition/page/page-result.ts';
import { realignWords } from '../../src/recognition/correction/realign-words.ts';
import { buildLine } from '../support/correction-pages.ts';

const right = (box: Box) => box.x + box.width;
const bottom = (box: Box) => box.y + box.height;

function assertInsideAndOrdered(line: TextLine, words: Word[]): void {
  const xs = line.polygon.map((point) => point[0]);
  const ys = line.polygon.map((point) => point[1]);
  for (const word of words) {
    assert.ok(word.box.width >= 1 && word.box.height >= 1, `${word.id} has an empty box`);
    assert.ok(word.box.x >= Math.min(...xs) && right(word.box) <= Math.max(...xs), `${word.id} leaves the line horizontally`);
    assert.ok(word.box.y >= Math.min(...ys) && bottom(word.box) <= Math.max(...ys), `${word.id} leaves the line vertically`);
  }
  for (let i = 1; i < words.length; i++)
    assert.ok(words[i].box.x >= right(words[i - 1].box) - 1, `${words[i].id} overlaps ${words[i - 1].id}`);
  assert.equal(new Set(words.map((word) => word.id)).size, words.length, 'word ids repeat');
}

test('same word count: texts map 1:1 and every box, id and confidence stays', () => {
  const line = buildLine({ id: 'l1', text: 'Stapf will complicatc my work', box: [128, 85, 953, 152], confidence: 0.81 });
  const words = realignWords(line, 'Stapf will complicate my work');
  assert.deepEqual(
    words.map((word) => word.text),
    ['Stapf', 'will', 'complicate', 'my', 'work'],
  );
  assert.deepEqual(
    words.map(({ id, box, confidence }) => ({ id, box, confidence })),
    line.words.map(({ id, box, confidence }) => ({ id, box, confidence })),
  );
});

test('a split word divides its recognised box at the character position', () => {
  const line = buildLine({ id: 'l4', text: 'to hard blows withthe Indian', box: [95, 392, 818, 83], confidence: 0.79 });
  const joined = line.words[3];
  assert.equal(joined.text, 'withthe');
  const words = realignWords(line, 'to hard blows with the Indian');
  assert.deepEqual(
    words.map((word) => word.text),
    ['to', 'hard', 'blows', 'with', 'the', 'Indian'],
  );
  // Untouched words keep their boxes and ids.
  for (const index of [0, 1, 2]) assert.deepEqual(words[index], line.words[index]);
  assert.deepEqual({ ...words[5], id: line.words[4].id }, line.words[4]);
  // "with" takes the first 4/7 of "withthe", "the" the last 3/7.
  const [withWord, theWord] = [words[3], words[4]];
  assert.equal(withWord.id, joined.id);
  assert.equal(theWord.id, `${joined.id}_2`);
  assert.equal(withWord.box.x, joined.box.x);
  assert.equal(right(theWord.box), right(joined.box));
  assert.equal(right(withWord.box), theWord.box.x);
  assert.equal(withWord.box.x + Math.round((joined.box.width * 4) / 7), right(withWord.box));
  assert.equal(withWord.box.y, joined.box.y);
  assertInsideAndOrdered(line, words);
});

test('joined words span both recognised boxes', () => {
  const line = buildLine({ id: 'l9', text: 'proofs & re vises!', box: [98, 791, 409, 79] });
  const words = realignWords(line, 'proofs & revises!');
  assert.deepEqual(
    words.map((word) => word.text),
    ['proofs', '&', 'revises!'],
  );
  assert.equal(words[2].box.x, line.words[2].box.x);
  assert.equal(right(words[2].box), right(line.words[3].box));
  assert.equal(words[2].id, line.words[2].id);
  assertInsideAndOrdered(line, words);
});

test('a wholly inserted word falls back to spreading the words by length over the line', () => {
  const line = buildLine({ id: 'l5', text: 'as well as those of', box: [106, 486, 641, 86] });
  const words = realignWords(line, 'as well as with those of');
  assert.deepEqual(
    words.map((word) => word.text),
    ['as', 'well', 'as', 'with', 'those', 'of'],
  );
  assert.equal(words[0].box.x, line.words[0].box.x);
  assert.equal(right(words[5].box), right(line.words[4].box));
  assertInsideAndOrdered(line, words);
  assert.deepEqual(
    words.map((word) => word.id),
    ['l5w1', 'l5w2', 'l5w3', 'l5w4', 'l5w5', 'l5_w6'],
  );
});

test('dropped words: the remaining words keep the boxes they align with', () => {
  const line = buildLine({ id: 'l6', text: 'their own own house!. &', box: [83, 573, 577, 78] });
  const words = realignWords(line, 'their own house!. &');
  assert.deepEqual(
    words.map((word) => word.text),
    ['their', 'own', 'house!.', '&'],
  );
  assert.deepEqual(words[0], line.words[0]);
  assert.deepEqual(words.at(-1)?.box, line.words.at(-1)?.box);
  assertInsideAndOrdered(line, words);
});

test('a line without word boxes spreads the words over its polygon', () => {
  const line: TextLine = { ...buildLine({ id: 'l7', text: 'require me', box: [90, 658, 540, 72] }), words: [] };
  const words = realignWords(line, 'require me to make');
  assert.equal(words.length, 4);
  assert.equal(words[0].box.x, 90);
  assert.equal(right(words[3].box), 630);
  assertInsideAndOrdered(line, words);
});

test('an empty corrected line has no words', () => {
  const line = buildLine({ id: 'l8', text: 'x', box: [0, 0, 10, 10] });
  assert.deepEqual(realignWords(line, '   '), []);
});

test('a word that keeps its recognised extent keeps its exact box and polygon', () => {
  const line = buildLine({ id: 'l3', text: 'Afri can grasscs', box: [159, 272, 850, 135] });
  line.words[2].polygon = [
    [700, 280],
    [1009, 272],
    [1009, 400],
    [700, 407],
  ];
  const words = realignWords(line, 'African grasses');
  assert.deepEqual(words[1], { ...line.words[2], text: 'grasses' });
  assert.equal(words[1].polygon?.length, 4);
  assert.equal(words[0].polygon, undefined);
});
