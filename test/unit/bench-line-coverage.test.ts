// eval:pages' line detection measure (bench/lib/line-coverage.ts) on shapes whose answer is known.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fillPolygon, lineCoverage } from '../../bench/lib/line-coverage.ts';
import type { Point } from '../../src/recognition/page/page-result.ts';

const rect = (x: number, y: number, w: number, h: number): Point[] => [
  [x, y],
  [x + w, y],
  [x + w, y + h],
  [x, y + h],
];

test('fillPolygon fills the pixels whose centres are inside, clipped to the raster', () => {
  assert.equal(fillPolygon(rect(0, 0, 10, 5), 100, 100).length, 50);
  assert.equal(fillPolygon(rect(-5, -5, 10, 10), 100, 100).length, 25);
  // A triangle: half of its 20×20 box.
  const triangle: Point[] = [
    [0, 0],
    [20, 0],
    [0, 20],
  ];
  assert.ok(Math.abs(fillPolygon(triangle, 100, 100).length - 200) <= 20);
});

test('a line is found at 50 % of its pixels inside detections; a detection is right at 50 % inside the truth', () => {
  const truth = [rect(0, 0, 100, 10), rect(0, 20, 100, 10), rect(0, 40, 100, 10)];
  const detected = [
    rect(0, 0, 60, 10), // 60 % of line 1: found, all of it inside: right
    rect(0, 20, 40, 10), // 40 % of line 2: not found, right
    rect(0, 60, 100, 10), // in no line: wrong
    rect(0, 40, 100, 30), // covers line 3 (found), a third inside the truth: wrong
  ];
  const coverage = lineCoverage(200, 200, truth, detected);
  assert.deepEqual(coverage.found, [true, false, true]);
  assert.deepEqual(coverage.right, [true, true, false, false]);
  assert.equal(coverage.order, 1);
  assert.deepEqual(coverage.matches, [0, 1, -1, 2], 'each detection to the line it shares most pixels with');
  // Read in the opposite order: detections matched to lines 3, 2, 1.
  const reversed = lineCoverage(200, 200, truth, [truth[2], truth[1], truth[0]]);
  assert.equal(reversed.order, 0);
  assert.deepEqual(reversed.matches, [2, 1, 0]);
});

test('a wrong detection mostly outside every annotated region is flagged outside; without regions none is', () => {
  const truth = [rect(20, 20, 100, 10), rect(20, 40, 100, 10)];
  const region = rect(10, 10, 120, 50);
  const detected = [
    rect(20, 20, 100, 10), // right
    rect(20, 52, 100, 6), // wrong (between the lines, inside the region): charged
    rect(140, 20, 50, 10), // a stamp beside the region: wrong, outside
    rect(100, 65, 60, 10), // wrong, a third inside the region: outside
  ];
  const coverage = lineCoverage(200, 200, truth, detected, [region]);
  assert.deepEqual(coverage.right, [true, false, false, false]);
  assert.deepEqual(coverage.outside, [false, false, true, true]);
  assert.deepEqual(lineCoverage(200, 200, truth, detected).outside, [false, false, false, false]);
});
