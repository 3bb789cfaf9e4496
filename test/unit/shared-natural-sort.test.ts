import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareNatural, comparePathsNaturally, sortPathsNaturally } from '../../src/shared/natural-sort.ts';

const sorted = (paths: string[]) => sortPathsNaturally(paths, (path) => path);

test('numbers compare by value, not by character', () => {
  assert.deepEqual(sorted(['10.jpg', '2.jpg', '1.jpg', '100.jpg', '9.jpg']), ['1.jpg', '2.jpg', '9.jpg', '10.jpg', '100.jpg']);
  assert.deepEqual(sorted(['page-10.png', 'page-2.png', 'page-1.png']), ['page-1.png', 'page-2.png', 'page-10.png']);
});

test('several numbers in one name are compared in turn', () => {
  assert.deepEqual(sorted(['v2-p10.jpg', 'v10-p1.jpg', 'v2-p9.jpg', 'v1-p20.jpg']), [
    'v1-p20.jpg',
    'v2-p9.jpg',
    'v2-p10.jpg',
    'v10-p1.jpg',
  ]);
});

test('directories are ordered naturally too, segment by segment', () => {
  assert.deepEqual(sorted(['part 10/1.jpg', 'part 2/10.jpg', 'part 2/9.jpg', 'part 1/b.jpg', 'part 1/a.jpg']), [
    'part 1/a.jpg',
    'part 1/b.jpg',
    'part 2/9.jpg',
    'part 2/10.jpg',
    'part 10/1.jpg',
  ]);
  // Segment-wise: the folder `a` comes before `a.b` although `/` > `.` in ASCII.
  assert.deepEqual(sorted(['a.b/1.jpg', 'a/2.jpg']), ['a/2.jpg', 'a.b/1.jpg']);
});

test('numbers of any length, leading zeros, and zero padding', () => {
  assert.deepEqual(sorted(['scan_0010.jpg', 'scan_0002.jpg', 'scan_0001.jpg']), ['scan_0001.jpg', 'scan_0002.jpg', 'scan_0010.jpg']);
  assert.deepEqual(sorted(['123456789012345678901234567890.jpg', '99999999999999999999999999999.jpg']), [
    '99999999999999999999999999999.jpg',
    '123456789012345678901234567890.jpg',
  ]);
  // Equal values: fewer leading zeros first, deterministically.
  assert.deepEqual(sorted(['001.jpg', '1.jpg', '01.jpg']), ['1.jpg', '01.jpg', '001.jpg']);
});

test('text is case-insensitive, with a deterministic tie-break', () => {
  assert.deepEqual(sorted(['b.jpg', 'A.jpg', 'a.jpg', 'C.jpg']), ['A.jpg', 'a.jpg', 'b.jpg', 'C.jpg']);
  assert.ok(compareNatural('Page', 'page') !== 0);
  assert.equal(compareNatural('same.jpg', 'same.jpg'), 0);
});

test('numbers sort before text at the same position; shorter prefixes first', () => {
  assert.ok(compareNatural('1.jpg', 'a.jpg') < 0);
  assert.ok(compareNatural('page', 'page1') < 0);
  assert.ok(comparePathsNaturally('a', 'a/1.jpg') < 0);
});

test('the comparison is a consistent total order (antisymmetric, transitive on a sample)', () => {
  const sample = ['1.jpg', '01.jpg', '10.jpg', '2.jpg', 'a/1.jpg', 'a/10.jpg', 'A/2.jpg', 'b.jpg', 'B.jpg', 'x10y2', 'x10y10', 'x9y99', ''];
  for (const a of sample) {
    for (const b of sample) {
      assert.equal(Math.sign(comparePathsNaturally(a, b)) + Math.sign(comparePathsNaturally(b, a)), 0, `${a} vs ${b}`);
      if (a !== b) assert.notEqual(comparePathsNaturally(a, b), 0, `${a} vs ${b}`);
      for (const c of sample) {
        if (comparePathsNaturally(a, b) < 0 && comparePathsNaturally(b, c) < 0)
          assert.ok(comparePathsNaturally(a, c) < 0, `${a} < ${b} < ${c}`);
      }
    }
  }
});
