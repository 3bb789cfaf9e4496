// bench/lib/document-halves.ts: the halves bench:correction-guards tunes on and reports on (ADR 0046).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type DocumentDifficulty, stratifiedHalves } from '../../bench/lib/document-halves.ts';

const doc = (document: string, cer: number, pages = 1): DocumentDifficulty => ({ document, pages, errors: cer * 10, length: 1000 });

test('one document of each pair of neighbours in difficulty goes to each half, whatever the input order', () => {
  const documents = [doc('d', 40), doc('a', 1), doc('f', 60), doc('c', 30), doc('b', 2), doc('e', 50)];
  const { tune, heldOut } = stratifiedHalves(documents);
  assert.deepEqual([...tune].sort(), ['a', 'c', 'e']);
  assert.deepEqual([...heldOut].sort(), ['b', 'd', 'f']);
  assert.deepEqual(stratifiedHalves([...documents].reverse()), { tune, heldOut });
});

test('the larger document of a pair goes to the half with fewer pages, so that the halves are alike in size', () => {
  // a (easy, 5 pages) fills the tune half first; then the larger of c/d goes to the held-out half
  const { tune, heldOut } = stratifiedHalves([doc('a', 1, 5), doc('b', 2), doc('c', 10, 4), doc('d', 11)]);
  assert.deepEqual([...tune].sort(), ['a', 'd']);
  assert.deepEqual([...heldOut].sort(), ['b', 'c']);
});

test('a lone last document goes to the smaller half; every document is in exactly one half', () => {
  const documents = [doc('a', 1, 3), doc('b', 2), doc('c', 3)];
  const { tune, heldOut } = stratifiedHalves(documents);
  assert.deepEqual([...tune], ['a']);
  assert.deepEqual([...heldOut].sort(), ['b', 'c']);
  assert.equal(tune.size + heldOut.size, documents.length);
});
