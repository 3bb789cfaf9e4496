// How dark a line's ink is against its own paper, relative to the other lines of the page.
// Show-through from the back of the leaf, a stain or a faint ruling is laid out as a line like
// any other, and a recognizer reads letters into it; its ink is far lighter than the page's
// writing. The measure is relative to the page's median line, so a page faded or written in
// pencil throughout keeps every line.
import type { RgbImage } from '../image/raster.ts';
import type { Point } from '../page/page-result.ts';

/** Share of a line's pixels taken as its ink level (a line's strokes cover more than this). */
const INK_SHARE = 0.03;

/**
 * A line's ink contrast: its paper level (median gray inside the polygon) minus its ink level
 * (the darkest 3 %), 0..255. Every second pixel each way is enough for two quantiles.
 */
export function inkContrast(image: RgbImage, polygon: readonly Point[]): number {
  const histogram = new Uint32Array(256);
  let count = 0;
  const ys = polygon.map(([, y]) => y);
  const top = Math.max(0, Math.floor(Math.min(...ys)));
  const bottom = Math.min(image.height, Math.ceil(Math.max(...ys)));
  for (let y = top; y < bottom; y += 2) {
    for (const [start, end] of rowSpans(polygon, y + 0.5)) {
      const from = Math.max(0, Math.ceil(start - 0.5));
      const to = Math.min(image.width, Math.ceil(end - 0.5));
      for (let x = from; x < to; x += 2) {
        const i = (y * image.width + x) * 3;
        histogram[(77 * image.data[i] + 150 * image.data[i + 1] + 29 * image.data[i + 2]) >> 8]++;
        count++;
      }
    }
  }
  if (count === 0) return 0;
  return quantile(histogram, count, 0.5) - quantile(histogram, count, INK_SHARE);
}

/**
 * Per line: its ink contrast as a share of the page's median line's. A page of fewer than three
 * lines has no median to go by: every line is at 1.
 */
export function contrastRatios(image: RgbImage, polygons: readonly (readonly Point[])[]): number[] {
  if (polygons.length < 3) return polygons.map(() => 1);
  const contrasts = polygons.map((polygon) => inkContrast(image, polygon));
  const median = [...contrasts].sort((a, b) => a - b)[Math.floor(contrasts.length / 2)];
  return contrasts.map((contrast) => (median > 0 ? contrast / median : 1));
}

/** Per line: whether its ink contrast is under `minRatio` of the page's median line (0: none is). */
export function faintLines(image: RgbImage, polygons: readonly (readonly Point[])[], minRatio: number): boolean[] {
  if (minRatio <= 0) return polygons.map(() => false);
  return contrastRatios(image, polygons).map((ratio) => ratio < minRatio);
}

/** The lines whose ink contrast is at least `minRatio` of the page's median line (faintLines' complement). */
export function withoutFaintLines<Line extends { polygon: readonly Point[] }>(
  image: RgbImage,
  lines: readonly Line[],
  minRatio: number,
): Line[] {
  const faint = faintLines(
    image,
    lines.map((line) => line.polygon),
    minRatio,
  );
  return lines.filter((_, index) => !faint[index]);
}

/** The x intervals where the horizontal line at `y` is inside the polygon (even-odd rule). */
function rowSpans(polygon: readonly Point[], y: number): [number, number][] {
  const crossings: number[] = [];
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i];
    const [xj, yj] = polygon[j];
    if (yi > y !== yj > y) crossings.push(xi + ((y - yi) * (xj - xi)) / (yj - yi));
  }
  crossings.sort((a, b) => a - b);
  const spans: [number, number][] = [];
  for (let k = 0; k + 1 < crossings.length; k += 2) spans.push([crossings[k], crossings[k + 1]]);
  return spans;
}

function quantile(histogram: Uint32Array, count: number, share: number): number {
  let seen = 0;
  for (let value = 0; value < 256; value++) {
    seen += histogram[value];
    if (seen >= share * count) return value;
  }
  return 255;
}
