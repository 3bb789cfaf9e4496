// Ink contrast of laid-out lines on constructed pages: show-through is faint against the page's
// writing, a page faded throughout is not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RgbImage } from '../../src/recognition/image/raster.ts';
import { faintLines, inkContrast } from '../../src/recognition/layout/ink-contrast.ts';
import type { Point } from '../../src/recognition/page/page-result.ts';

const WIDTH = 400;

/** A white page with one band of strokes per line: `ink` is the strokes' gray level. */
function page(inks: readonly number[]): { image: RgbImage; polygons: Point[][] } {
  const height = inks.length * 40;
  const data = new Uint8Array(WIDTH * height * 3).fill(235);
  const polygons: Point[][] = [];
  inks.forEach((ink, line) => {
    const top = line * 40;
    // Vertical strokes 3 px wide every 12 px (a quarter of the line's pixels) in the middle of the band.
    for (let y = top + 10; y < top + 30; y++)
      for (let x = 20; x < WIDTH - 20; x++) if (x % 12 < 3) data.fill(ink, (y * WIDTH + x) * 3, (y * WIDTH + x) * 3 + 3);
    polygons.push([
      [10, top + 4],
      [WIDTH - 10, top + 4],
      [WIDTH - 10, top + 36],
      [10, top + 36],
    ]);
  });
  return { image: { data, width: WIDTH, height }, polygons };
}

test("a line's ink contrast is its paper level minus its strokes' level", () => {
  const { image, polygons } = page([20, 170]);
  assert.ok(Math.abs(inkContrast(image, polygons[0]) - 215) <= 2, String(inkContrast(image, polygons[0])));
  assert.ok(Math.abs(inkContrast(image, polygons[1]) - 65) <= 2, String(inkContrast(image, polygons[1])));
  // Outside the page counts nothing; an empty outline has no contrast.
  assert.equal(
    inkContrast(image, [
      [500, 0],
      [600, 0],
      [600, 30],
    ]),
    0,
  );
});

test('show-through among dark writing is faint; the writing is not', () => {
  const { image, polygons } = page([30, 25, 190, 35, 40, 200]);
  assert.deepEqual(faintLines(image, polygons, 0.25), [false, false, true, false, false, true]);
  // No threshold, no filter.
  assert.deepEqual(faintLines(image, polygons, 0), [false, false, false, false, false, false]);
});

test('a page faded throughout keeps every line, and a page of two lines has no median to go by', () => {
  const faded = page([170, 180, 175, 185]);
  assert.deepEqual(faintLines(faded.image, faded.polygons, 0.25), [false, false, false, false]);
  const two = page([20, 210]);
  assert.deepEqual(faintLines(two.image, two.polygons, 0.25), [false, false]);
});
