// Layout geometry on constructed inputs: hulls and rotated rectangles, DB
// post-processing of a probability map, line grouping and reading order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dbBoxes, labelComponents } from '../../src/recognition/layout/db-postprocess.ts';
import {
  convexHull,
  enclosingRect,
  minAreaRect,
  normaliseRect,
  rectCorners,
  type RotatedRect,
} from '../../src/recognition/page/geometry.ts';
import { groupLines, makeLine } from '../../src/recognition/layout/group-lines.ts';
import { withLinesKept } from '../../src/recognition/layout/kept-lines.ts';
import { orderRegions } from '../../src/recognition/layout/reading-order.ts';
import type { DetectedBox } from '../../src/recognition/layout/text-detector.ts';

const close = (actual: number, expected: number, tolerance = 1e-6) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} != ${expected}`);

test('minimum-area rectangle of a rotated rectangle is that rectangle', () => {
  const rect: RotatedRect = { cx: 100, cy: 50, width: 80, height: 20, angle: (10 * Math.PI) / 180 };
  const found = minAreaRect(convexHull(rectCorners(rect)));
  close(found.cx, 100);
  close(found.cy, 50);
  close(found.width, 80);
  close(found.height, 20);
  close(found.angle, rect.angle);
});

test('rectangles are turned so that width runs along the writing; tall ones read bottom to top', () => {
  const swapped = normaliseRect({ cx: 0, cy: 0, width: 20, height: 80, angle: Math.PI / 2 - 0.1 });
  close(swapped.width, 80);
  close(swapped.angle, -0.1);
  const vertical = normaliseRect({ cx: 0, cy: 0, width: 20, height: 90, angle: 0 });
  close(vertical.width, 90);
  close(vertical.angle, -Math.PI / 2);
});

test('a whole line is the rectangle along its direction around all its pieces', () => {
  // two pieces of a line rising at 0.1 rad, the second a little higher off the line and shorter
  const angle = 0.1;
  const along = (u: number, v: number): [number, number] => [
    100 + u * Math.cos(angle) - v * Math.sin(angle),
    200 + u * Math.sin(angle) + v * Math.cos(angle),
  ];
  const [ax, ay] = along(50, 0);
  const [bx, by] = along(230, -6);
  const pieces: RotatedRect[] = [
    { cx: ax, cy: ay, width: 100, height: 40, angle },
    { cx: bx, cy: by, width: 140, height: 30, angle },
  ];
  const line = enclosingRect(pieces, angle);
  assert.ok(Math.abs(line.width - 300) < 1e-9, `width ${line.width}`); // u from 0 to 300
  assert.ok(Math.abs(line.height - 41) < 1e-9, `height ${line.height}`); // v from -21 to 20
  const [cx, cy] = along(150, -0.5);
  assert.ok(Math.abs(line.cx - cx) < 1e-9 && Math.abs(line.cy - cy) < 1e-9);
  assert.equal(line.angle, angle);
  const single = enclosingRect([pieces[0]], angle);
  for (const key of ['cx', 'cy', 'width', 'height', 'angle'] as const) assert.ok(Math.abs(single[key] - pieces[0][key]) < 1e-9, key);
});

test('DB post-processing finds one box per kernel, scores it and grows it back', () => {
  const width = 120;
  const height = 60;
  const data = new Float32Array(width * height);
  const fill = (x0: number, y0: number, x1: number, y1: number, value: number) => {
    for (let y = y0; y < y1; y += 1) for (let x = x0; x < x1; x += 1) data[y * width + x] = value;
  };
  fill(10, 10, 70, 18, 0.9); // a text kernel
  fill(80, 40, 110, 48, 0.35); // weak: above the pixel threshold, below the box threshold
  fill(5, 50, 7, 52, 0.95); // a speck: too small
  const boxes = dbBoxes({ data, width, height }, { threshold: 0.3, boxThreshold: 0.6, unclipRatio: 1.5 });
  assert.equal(boxes.length, 1);
  const [box] = boxes;
  close(box.score, 0.9, 1e-6);
  close(box.cx, 40);
  close(box.cy, 14);
  // 60 x 8 kernel, grown by area * 1.5 / perimeter = 720 / 136 on each side.
  close(box.width, 60 + (2 * 720) / 136);
  close(box.height, 8 + (2 * 720) / 136);
});

test('kernels: 8-connected components in the order of their first pixels, arms that meet below joined', () => {
  // a U whose arms meet in its third row, and a stroke joined only corner to corner, right of it
  const rows = ['a.a..b', 'a.a..b', 'aaa.b.', '....b.', 'c.....'];
  const values: Record<string, number> = { a: 0.5, b: 0.75, c: 0.25 };
  const width = rows[0].length;
  const data = Float32Array.from(rows.join(''), (mark) => values[mark] ?? 0);
  const components = labelComponents({ data, width, height: rows.length }, 0.2);
  const outline = (spans: [number, number, number][]) =>
    spans.flatMap(([row, first, last]) => [
      [first, row],
      [last + 1, row],
      [first, row + 1],
      [last + 1, row + 1],
    ]);
  assert.deepEqual(components, [
    {
      pixels: 7,
      probabilitySum: 3.5,
      outline: outline([
        [0, 0, 2],
        [1, 0, 2],
        [2, 0, 2],
      ]),
    },
    {
      pixels: 4,
      probabilitySum: 3,
      outline: outline([
        [0, 5, 5],
        [1, 5, 5],
        [2, 4, 4],
        [3, 4, 4],
      ]),
    },
    { pixels: 1, probabilitySum: 0.25, outline: outline([[4, 0, 0]]) },
  ]);
  // under the threshold, the faint pixel is no kernel
  assert.equal(labelComponents({ data, width, height: rows.length }, 0.3).length, 2);
});

function piece(x: number, y: number, width: number, height = 40, angle = 0): DetectedBox {
  return { cx: x + width / 2, cy: y + height / 2, width, height, angle, score: 0.9 };
}

test('pieces on one writing line join; the next line and a margin note stay apart; a mark within a piece is not read again', () => {
  const lines = groupLines([
    piece(300, 100, 400),
    piece(760, 104, 300), // a word gap of 1.5 line heights
    piece(1100, 98, 200),
    piece(300, 160, 700),
    piece(300, 220, 760),
    piece(40, 225, 150), // a note in the left margin, level with the third line
    piece(360, 222, 20, 12), // a small mark within the third line's piece: its crop holds it already
    piece(1070, 222, 20, 12), // a small mark past the third line's end joins it
  ]);
  const summary = lines.map((line) => line.fragments.map((fragment) => Math.round(fragment.cx - fragment.width / 2)));
  assert.deepEqual(
    summary.sort((a, b) => a[0] - b[0] || a.length - b.length),
    [[40], [300, 1070], [300, 760, 1100], [300]].sort((a, b) => a[0] - b[0] || a.length - b.length),
  );
});

test("a line in several pieces is outlined by its pieces' top edges, then their bottom edges back: a simple polygon", () => {
  const [line] = groupLines([piece(100, 100, 200), piece(330, 96, 150, 48), piece(500, 104, 180)]);
  assert.equal(line.fragments.length, 3);
  const half = line.polygon.length / 2;
  const upper = line.polygon.slice(0, half);
  const lower = line.polygon.slice(half);
  // The upper contour runs left to right along the tops, the lower one back along the bottoms.
  assert.deepEqual(
    upper.map(([x]) => x),
    [100, 300, 330, 480, 500, 680],
  );
  assert.ok(upper.every(([, y]) => y <= 104) && lower.every(([, y]) => y >= 140), JSON.stringify(line.polygon));
  assert.deepEqual(
    lower.map(([x]) => x),
    [680, 500, 480, 330, 300, 100],
  );
  // No two edges cross.
  const edges = line.polygon.map((point, index) => [point, line.polygon[(index + 1) % line.polygon.length]] as const);
  const cross = (a: readonly number[], b: readonly number[], c: readonly number[]): number =>
    (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
  for (const [i, [p1, p2]] of edges.entries()) {
    for (const [j, [q1, q2]] of edges.entries()) {
      if (Math.abs(i - j) <= 1 || Math.abs(i - j) === edges.length - 1) continue;
      const proper = cross(p1, p2, q1) * cross(p1, p2, q2) < 0 && cross(q1, q2, p1) * cross(q1, q2, p2) < 0;
      assert.ok(!proper, `edges ${i} and ${j} cross`);
    }
  }
});

test('reading order: two columns are read one after the other, not across', () => {
  const left = [0, 1, 2, 3, 4].map((row) => piece(100, 100 + row * 60, 500));
  const right = [0, 1, 2, 3, 4].map((row) => piece(700, 100 + row * 60, 500));
  const regions = orderRegions(groupLines([...right, ...left].reverse()));
  const order = regions.flatMap((region) => region.lines.map((line) => [Math.round(line.box.x), Math.round(line.box.y)]));
  const xs = order.map(([x]) => x);
  assert.deepEqual(
    xs.slice(0, 5).map((x) => x < 650),
    [true, true, true, true, true],
  );
  assert.deepEqual(
    xs.slice(5).map((x) => x > 650),
    [true, true, true, true, true],
  );
  const ys = order.map(([, y]) => y);
  assert.deepEqual(
    ys.slice(0, 5),
    [...ys.slice(0, 5)].sort((a, b) => a - b),
  );
  assert.equal(regions.length, 2);
  assert.deepEqual(
    regions.map((region) => region.type),
    ['paragraph', 'paragraph'],
  );
});

test('reading order: a margin note is read before the line it stands beside, in a region of its own', () => {
  const main = [0, 1, 2, 3, 4, 5].map((row) => piece(400, 100 + row * 60, 800));
  const note = piece(40, 220, 200);
  const regions = orderRegions(groupLines([note, ...main]));
  const lines = regions.flatMap((region) => region.lines);
  const noteIndex = lines.findIndex((line) => line.box.x < 300);
  assert.equal(noteIndex, 2);
  const noteRegion = regions.find((region) => region.lines.some((line) => line.box.x < 300));
  assert.equal(noteRegion?.type, 'marginalia');
  assert.equal(noteRegion?.lines.length, 1);
  // Main text before and after the note: two paragraph regions around it.
  assert.deepEqual(
    regions.map((region) => [region.type, region.lines.length]),
    [
      ['paragraph', 2],
      ['marginalia', 1],
      ['paragraph', 4],
    ],
  );
});

test('reading order: a blank line between paragraphs starts a new region', () => {
  const first = [0, 1, 2].map((row) => piece(100, 100 + row * 50, 800));
  const second = [0, 1].map((row) => piece(100, 400 + row * 50, 800));
  const regions = orderRegions(groupLines([...second, ...first]));
  assert.deepEqual(
    regions.map((region) => region.lines.length),
    [3, 2],
  );
});

test('a line of another layout is kept in place of the one line it matches, and only there', () => {
  // The detector's lines of a page, and the segmenter's versions of some (boxes: left, top, width, height).
  const line = (x: number, y: number, width: number, height = 40) => makeLine([piece(x, y, width, height)]);
  const detected = [
    line(300, 100, 1000),
    line(300, 160, 1000),
    line(300, 220, 480),
    line(820, 220, 480),
    line(300, 280, 1000),
    line(300, 340, 1000),
    line(560, 345, 30, 12),
  ];
  const same = line(290, 96, 1020, 48); // the first line, outlined a little wider
  const second = line(300, 158, 1000, 44); // the second, while another line of its own layout also claims it
  const alsoSecond = line(320, 162, 960, 40);
  const joined = line(300, 222, 1000); // the two halves of the third line as one: the detector split it
  const shorter = line(300, 282, 860); // the fifth, but over 86 % of its span only
  const withMark = line(300, 338, 1000, 44); // the sixth, with a mark the detector found apart inside it
  const { lines, placed } = withLinesKept(detected, [same, second, alsoSecond, joined, shorter, withMark]);
  assert.deepEqual([...placed], [same, second]);
  assert.deepEqual(lines, [same, second, ...detected.slice(2)]);
  // lines along the height of the page are matched along it
  const turn = (x: number, y: number, length: number) =>
    makeLine([{ cx: x, cy: y, width: length, height: 40, angle: -Math.PI / 2, score: 1 }]);
  const along = withLinesKept([turn(100, 500, 800), turn(160, 500, 800)], [turn(102, 505, 790), turn(160, 300, 400)]);
  assert.equal(along.placed.size, 1);
  assert.equal(along.lines[0].box.height, turn(102, 505, 790).box.height);
});
