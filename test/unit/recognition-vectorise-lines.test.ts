// Vectorisation of segmentation maps into baselines and polygons, on synthetic maps drawn
// here: each line's baseline as a 3 px stroke, its region as the polygon 0.65 interline above
// and 0.33 below the baseline (so adjacent lines' regions merge, as in the segmenter's
// training data), with soft edges and faint background noise.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Point } from '../../src/recognition/page/page-result.ts';
import { type SegmentationMaps, type VectorLine, vectoriseLines } from '../../src/recognition/layout/vectorise-lines.ts';
import { insidePolygon } from '../support/polygons.ts';

const WIDTH = 512;
const HEIGHT = 400;

/** A deterministic pseudo-random sequence in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function blankMaps(seed = 1): SegmentationMaps {
  const next = random(seed);
  const baseline = new Float32Array(WIDTH * HEIGHT);
  const region = new Float32Array(WIDTH * HEIGHT);
  for (let i = 0; i < baseline.length; i += 1) {
    baseline[i] = 0.1 * next();
    region[i] = 0.15 * next();
  }
  return { width: WIDTH, height: HEIGHT, baseline, region };
}

function segmentDistance(px: number, py: number, a: Point, b: Point): number {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const length2 = dx * dx + dy * dy;
  const t = length2 === 0 ? 0 : Math.min(1, Math.max(0, ((px - a[0]) * dx + (py - a[1]) * dy) / length2));
  return Math.hypot(px - a[0] - t * dx, py - a[1] - t * dy);
}

/** A polyline `thickness` px wide; pixel (i, j) is the point (i + 0.5, j + 0.5); edges fade over a pixel. */
function drawPolyline(map: Float32Array, points: readonly Point[], thickness = 3, value = 0.95): void {
  const r = thickness / 2;
  for (let s = 1; s < points.length; s += 1) {
    const a = points[s - 1];
    const b = points[s];
    const x0 = Math.max(0, Math.floor(Math.min(a[0], b[0]) - r - 1));
    const x1 = Math.min(WIDTH - 1, Math.ceil(Math.max(a[0], b[0]) + r + 1));
    const y0 = Math.max(0, Math.floor(Math.min(a[1], b[1]) - r - 1));
    const y1 = Math.min(HEIGHT - 1, Math.ceil(Math.max(a[1], b[1]) + r + 1));
    for (let y = y0; y <= y1; y += 1) {
      for (let x = x0; x <= x1; x += 1) {
        const d = segmentDistance(x + 0.5, y + 0.5, a, b);
        const p = value * Math.min(1, Math.max(0, r + 0.5 - d));
        if (p > map[y * WIDTH + x]) map[y * WIDTH + x] = p;
      }
    }
  }
}

/** Fills a polygon, row by row: pixel (i, j) is inside when its centre is (even-odd rule). */
function fillPolygon(map: Float32Array, polygon: readonly Point[], value = 0.9): void {
  for (let y = 0; y < HEIGHT; y += 1) {
    const yc = y + 0.5;
    const crossings: number[] = [];
    for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i, i += 1) {
      const [xi, yi] = polygon[i];
      const [xj, yj] = polygon[j];
      if (yi > yc !== yj > yc) crossings.push(xi + ((xj - xi) * (yc - yi)) / (yj - yi));
    }
    crossings.sort((a, b) => a - b);
    for (let k = 0; k + 1 < crossings.length; k += 2) {
      for (let x = Math.max(0, Math.ceil(crossings[k] - 0.5)); x < Math.min(WIDTH, crossings[k + 1] - 0.5); x += 1) {
        if (value > map[y * WIDTH + x]) map[y * WIDTH + x] = value;
      }
    }
  }
}

/** Gaussian blur (separable), as a network's output is soft. */
function blur(map: Float32Array, sigma: number): void {
  const radius = Math.ceil(2.5 * sigma);
  const kernel = Array.from({ length: 2 * radius + 1 }, (_, i) => Math.exp(-((i - radius) ** 2) / (2 * sigma * sigma)));
  const sum = kernel.reduce((a, b) => a + b, 0);
  const along = (get: (i: number) => number, n: number, set: (i: number, v: number) => void) => {
    const line = Float32Array.from({ length: n }, (_, i) => get(i));
    for (let i = 0; i < n; i += 1) {
      let value = 0;
      for (let k = -radius; k <= radius; k += 1) value += kernel[k + radius] * line[Math.min(n - 1, Math.max(0, i + k))];
      set(i, value / sum);
    }
  };
  for (let y = 0; y < HEIGHT; y += 1)
    along(
      (x) => map[y * WIDTH + x],
      WIDTH,
      (x, v) => (map[y * WIDTH + x] = v),
    );
  for (let x = 0; x < WIDTH; x += 1)
    along(
      (y) => map[y * WIDTH + x],
      HEIGHT,
      (y, v) => (map[y * WIDTH + x] = v),
    );
}

/** A line as the segmenter is trained to see it: its baseline, and the region 0.65 interline above it and 0.33 below. */
function drawLine(
  maps: SegmentationMaps,
  baseline: readonly Point[],
  interline: number,
  pieces: readonly (readonly Point[])[] = [baseline],
): void {
  for (const piece of pieces) drawPolyline(maps.baseline, piece);
  const pad = 0.25 * interline;
  const first = baseline[0];
  const last = baseline[baseline.length - 1];
  const upper: Point[] = [[first[0] - pad, first[1] - 0.65 * interline], ...baseline.map(([x, y]): Point => [x, y - 0.65 * interline])];
  upper.push([last[0] + pad, last[1] - 0.65 * interline]);
  const lower: Point[] = [[first[0] - pad, first[1] + 0.33 * interline], ...baseline.map(([x, y]): Point => [x, y + 0.33 * interline])];
  lower.push([last[0] + pad, last[1] + 0.33 * interline]);
  fillPolygon(maps.region, [...upper, ...lower.reverse()]);
}

function straight(x0: number, x1: number, y: number): Point[] {
  return [
    [x0, y],
    [x1, y],
  ];
}

/** The y of a polyline at x (straight on beyond its ends). */
function yAt(line: readonly Point[], x: number): number {
  let i = 1;
  while (i < line.length - 1 && line[i][0] < x) i += 1;
  const [ax, ay] = line[i - 1];
  const [bx, by] = line[i];
  return ay + ((by - ay) * (x - ax)) / (bx - ax);
}

/** Points every `step` px along a polyline, leaving `margin` px at both ends. */
function along(line: readonly Point[], step = 4, margin = 3): Point[] {
  const points: Point[] = [];
  for (let s = 1; s < line.length; s += 1) {
    const [ax, ay] = line[s - 1];
    const [bx, by] = line[s];
    const length = Math.hypot(bx - ax, by - ay);
    for (let t = 0; t < length; t += step) points.push([ax + ((bx - ax) * t) / length, ay + ((by - ay) * t) / length]);
  }
  points.push(line[line.length - 1]);
  const first = line[0];
  const last = line[line.length - 1];
  return points.filter(
    (p) => Math.hypot(p[0] - first[0], p[1] - first[1]) >= margin && Math.hypot(p[0] - last[0], p[1] - last[1]) >= margin,
  );
}

/** Checks the output's shape, pairs each expected baseline with its detected line and checks ends and polygons. */
function checkLines(
  found: VectorLine[],
  expected: readonly Point[][],
  tolerance = 3,
  endTolerance = (_line: number) => tolerance,
): VectorLine[] {
  for (const line of found) {
    assert.ok(line.baseline.length >= 2, 'a baseline has 2 points at least');
    for (let i = 1; i < line.baseline.length; i += 1)
      assert.ok(line.baseline[i][0] > line.baseline[i - 1][0], 'baselines run left to right');
    assert.ok(line.polygon.length >= 3, 'a polygon has 3 points at least');
    const first = line.polygon[0];
    const last = line.polygon[line.polygon.length - 1];
    assert.ok(first[0] !== last[0] || first[1] !== last[1], 'the closing point is not repeated');
    for (const [x, y] of [...line.baseline, ...line.polygon])
      assert.ok(x >= 0 && x <= WIDTH && y >= 0 && y <= HEIGHT, `(${x}, ${y}) in the map`);
  }
  assert.equal(found.length, expected.length, `${expected.length} lines expected, found ${found.length}`);
  const matched = expected.map((truth) => {
    const points = along(truth, 8);
    const cost = (line: VectorLine) =>
      points.reduce((sum, [x, y]) => {
        const within = x >= line.baseline[0][0] && x <= line.baseline[line.baseline.length - 1][0];
        return sum + (within ? Math.min(50, Math.abs(yAt(line.baseline, x) - y)) : 50);
      }, 0);
    return found.reduce((best, line) => (cost(line) < cost(best) ? line : best));
  });
  assert.equal(new Set(matched).size, expected.length, 'each expected line has a line of its own');
  const dense = expected.map((truth) => along(truth, 1, 0));
  expected.forEach((truth, i) => {
    const line = matched[i].baseline;
    const [start, end] = [truth[0], truth[truth.length - 1]];
    const [foundStart, foundEnd] = [line[0], line[line.length - 1]];
    assert.ok(
      Math.hypot(foundStart[0] - start[0], foundStart[1] - start[1]) <= tolerance,
      `line ${i} starts at ${foundStart}, not ${start}`,
    );
    assert.ok(Math.hypot(foundEnd[0] - end[0], foundEnd[1] - end[1]) <= endTolerance(i), `line ${i} ends at ${foundEnd}, not ${end}`);
    for (const [x, y] of along(truth)) assert.ok(Math.abs(yAt(line, x) - y) <= 2, `line ${i} at x=${x}: ${yAt(line, x)}, not ${y}`);
    for (const [x, y] of along(truth)) assert.ok(insidePolygon([x, y], matched[i].polygon), `line ${i}: (${x}, ${y}) inside its polygon`);
    expected.forEach((other, j) => {
      if (j === i) return;
      // Where two lines touch, the other's baseline is this one's.
      const apart = along(other, 4, 0).filter(([x, y]) =>
        dense[i].every(([tx, ty]) => Math.abs(tx - x) > 4 || Math.hypot(tx - x, ty - y) > 4),
      );
      for (const [x, y] of apart)
        assert.ok(!insidePolygon([x, y], matched[i].polygon), `line ${i}'s polygon holds (${x}, ${y}) of line ${j}`);
    });
  });
  return matched;
}

test('straight lines: one line each, polygons reaching up to the region and never to the next baseline', (t) => {
  const maps = blankMaps();
  const interline = 20;
  const expected = Array.from({ length: 15 }, (_, k) => straight(40, 470, 60 + k * interline));
  for (const line of expected) drawLine(maps, line, interline);
  const found = vectoriseLines(maps);
  for (let i = 0; i < 5; i += 1) vectoriseLines(maps);
  const started = performance.now();
  for (let i = 0; i < 10; i += 1) vectoriseLines(maps);
  t.diagnostic(
    `${WIDTH}×${HEIGHT} map, ${found.length} lines: ${((performance.now() - started) / 10).toFixed(1)} ms each (after 6 warm-up runs)`,
  );
  const matched = checkLines(found, expected);
  // The first line has no line above: its outline follows the region, 0.65 interline up.
  const top = Math.min(...matched[0].polygon.map(([, y]) => y));
  assert.ok(Math.abs(top - (60 - 0.65 * interline)) <= 2, `top of the first line at ${top}`);
  // The last one has none below: 0.33 interline down.
  const bottom = Math.max(...matched[14].polygon.map(([, y]) => y));
  assert.ok(Math.abs(bottom - (60 + 14 * interline + 0.33 * interline)) <= 2, `bottom of the last line at ${bottom}`);
});

test('lines that touch at a point stay apart: descenders drawn as baseline, a line rising into the one above', () => {
  const maps = blankMaps(2);
  const interline = 16;
  const ys = Array.from({ length: 12 }, (_, k) => 80 + k * interline);
  const expected = ys.map((y) => straight(40, 470, y));
  // Line 8 rises at its end to touch line 7.
  expected[8] = [
    [40, ys[8]],
    [430, ys[8]],
    [460, ys[7]],
  ];
  for (const line of expected) drawLine(maps, line, interline);
  // A straight descender joining lines 2 and 3, a slanted one joining 4 and 5, and a long one through 9 into 10.
  drawPolyline(maps.baseline, [
    [200, ys[2]],
    [201, ys[3]],
  ]);
  drawPolyline(maps.baseline, [
    [300, ys[4]],
    [314, ys[5]],
  ]);
  drawPolyline(maps.baseline, [
    [120, ys[9] - 4],
    [124, ys[10] + 2],
  ]);
  // Where line 8 runs into line 7 their strokes share their pixels for the last few columns:
  // which of them the end belongs to is not in the map, so that end is found within 8 px.
  checkLines(vectoriseLines(maps), expected, 3, (line) => (line === 8 ? 8 : 3));
});

test('slanted lines (a page turned 10°) come out along their slant', () => {
  const maps = blankMaps(3);
  const interline = 20;
  const angle = (10 * Math.PI) / 180;
  const [cos, sin] = [Math.cos(angle), Math.sin(angle)];
  const expected = Array.from({ length: 10 }, (_, k): Point[] => {
    const x0 = 60 - k * interline * sin;
    const y0 = 50 + k * interline * cos;
    return [
      [x0, y0],
      [x0 + 380 * cos, y0 + 380 * sin],
    ];
  });
  // Lines are drawn with the interline measured across them.
  for (const line of expected) drawLine(maps, line, interline / cos);
  checkLines(vectoriseLines(maps), expected);
});

test('curved lines follow their curve', () => {
  const maps = blankMaps(4);
  const interline = 22;
  const expected = Array.from({ length: 12 }, (_, k): Point[] => {
    const points: Point[] = [];
    for (let x = 40; x <= 470; x += 5)
      points.push([x, 60 + k * interline + 8 * Math.sin((2 * Math.PI * (x - 40)) / 400) + 0.01 * k * (x - 40)]);
    return points;
  });
  for (const line of expected) drawLine(maps, line, interline);
  checkLines(vectoriseLines(maps), expected);
});

test('a line broken into three pieces comes out as one line', () => {
  const maps = blankMaps(5);
  const interline = 20;
  const expected = Array.from({ length: 12 }, (_, k) => straight(40, 470, 70 + k * interline));
  expected.forEach((line, k) => {
    if (k === 5) {
      // Gaps of 0.75 and 2 interlines (a word space, faded ink); the line's region goes on across them.
      drawLine(maps, line, interline, [straight(40, 150, line[0][1]), straight(165, 300, line[0][1]), straight(340, 470, line[0][1])]);
    } else if (k === 8) {
      // Pieces slightly off each other's height, as a hand drifts.
      drawLine(maps, line, interline, [straight(40, 200, line[0][1] - 1), straight(215, 470, line[0][1] + 1)]);
    } else drawLine(maps, line, interline);
  });
  checkLines(vectoriseLines(maps), expected);
});

test('soft maps of dense lines (interline 12, blurred): every line found; a long faded stretch is followed (hysteresis)', () => {
  const maps = blankMaps(9);
  const interline = 12;
  const expected = Array.from({ length: 25 }, (_, k) => straight(40, 470, 50 + k * interline));
  expected.forEach((line, k) => {
    const y = line[0][1];
    if (k === 10) {
      // Faded ink over 200 px (16 interlines): between the low and the high threshold once blurred.
      drawLine(maps, line, interline, [straight(40, 150, y), straight(350, 470, y)]);
      drawPolyline(maps.baseline, straight(150, 350, y), 3, 0.5);
    } else drawLine(maps, line, interline);
  });
  blur(maps.baseline, 1.2);
  blur(maps.region, 1.2);
  checkLines(vectoriseLines(maps), expected);
});

test('two columns side by side stay two lines per row across a gutter of 2 interlines', () => {
  const maps = blankMaps(6);
  const interline = 20;
  const expected: Point[][] = [];
  for (let k = 0; k < 14; k += 1) {
    const y = 60 + k * interline;
    expected.push(straight(30, 236 - (k % 3) * 12, y), straight(276, 482, y + (k % 2)));
  }
  for (const line of expected) drawLine(maps, line, interline);
  const found = checkLines(vectoriseLines(maps), expected);
  for (const line of found) {
    const xs = line.baseline.map(([x]) => x);
    assert.ok(Math.max(...xs) < 256 || Math.min(...xs) > 256, 'no line crosses the gutter');
    const polygonXs = line.polygon.map(([x]) => x);
    assert.ok(Math.max(...polygonXs) < 256 || Math.min(...polygonXs) > 256, 'no polygon crosses the gutter');
  }
});

test('noise specks and strokes without a line region are dropped', () => {
  const maps = blankMaps(7);
  const interline = 20;
  const expected = Array.from({ length: 12 }, (_, k) => straight(60, 420, 70 + k * interline));
  for (const line of expected) drawLine(maps, line, interline);
  const next = random(99);
  let specks = 0;
  while (specks < 60) {
    const x = 5 + next() * (WIDTH - 10);
    const y = 5 + next() * (HEIGHT - 10);
    // Anywhere but on a baseline: in the margins, and between the lines inside their regions.
    const nearest = Math.min(...expected.map((line) => (x > 50 && x < 430 ? Math.abs(line[0][1] - y) : Infinity)));
    if (nearest < 0.4 * interline) continue;
    const length = 1 + next() * 4;
    drawPolyline(maps.baseline, [
      [x, y],
      [x + length, y + next() * 2 - 1],
    ]);
    specks += 1;
  }
  // Longer strokes in the margins, where no line region is.
  drawPolyline(maps.baseline, straight(440, 500, 100));
  drawPolyline(maps.baseline, straight(5, 45, 300));
  checkLines(vectoriseLines(maps), expected);
});

test('an empty map has no lines; maps of the wrong size are refused', () => {
  assert.deepEqual(vectoriseLines(blankMaps()), []);
  assert.deepEqual(vectoriseLines({ width: 0, height: 0, baseline: new Float32Array(0), region: new Float32Array(0) }), []);
  assert.throws(() => vectoriseLines({ width: 10, height: 10, baseline: new Float32Array(99), region: new Float32Array(100) }), RangeError);
});

test('a single line on its own gets its interline from the region', () => {
  const maps = blankMaps(8);
  const expected = [straight(100, 400, 200)];
  drawLine(maps, expected[0], 24);
  const [line] = checkLines(vectoriseLines(maps), expected);
  const ys = line.polygon.map(([, y]) => y);
  assert.ok(Math.abs(Math.min(...ys) - (200 - 0.65 * 24)) <= 2, `top at ${Math.min(...ys)}`);
  assert.ok(Math.abs(Math.max(...ys) - (200 + 0.33 * 24)) <= 2, `bottom at ${Math.max(...ys)}`);
});

test('with an ends map, a margin note level with a line stays its own line; without it, the two are one', () => {
  const interline = 20;
  const rows = Array.from({ length: 12 }, (_, k) => 60 + k * interline);
  const note = straight(20, 100, rows[4]);
  const line = straight(112, 470, rows[4]);
  const pageNumber = straight(440, 470, rows[0] - interline);
  const others = rows.filter((_, k) => k !== 4).map((y) => straight(112, 470, y));
  const expected = [pageNumber, ...others.slice(0, 4), note, line, ...others.slice(4)];
  const draw = (withEnds: boolean): SegmentationMaps => {
    const maps = blankMaps(10);
    // The baseline map runs on across the gap between the note and its line, as the segmenter draws it.
    for (const baseline of [pageNumber, ...others]) drawLine(maps, baseline, interline);
    drawLine(maps, straight(20, 470, rows[4]), interline);
    if (withEnds) {
      maps.ends = new Float32Array(WIDTH * HEIGHT);
      for (const baseline of expected)
        for (const point of [baseline[0], baseline[baseline.length - 1]]) drawPolyline(maps.ends, [point, point], 6, 0.9);
    }
    return maps;
  };
  checkLines(vectoriseLines(draw(true)), expected, 4);
  const joined = vectoriseLines(draw(false)).filter((found) => Math.abs(found.baseline[0][1] - rows[4]) < 3);
  assert.equal(joined.length, 1, 'without line ends the note and its line are one baseline');
});
