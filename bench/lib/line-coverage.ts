// Line detection against ground truth by pixels, as issue 11 defines it: a ground-truth line
// is found when at least half of its polygon's pixels lie inside detected lines; a detected
// line is right when at least half of it lies inside ground-truth lines. Polygons are filled
// on a raster of the page (scaled so its longer side is at most 1000 px: the share of pixels
// hardly moves, and a page costs a few milliseconds).
//
// Ground truth may not cover every piece of writing on a page (htr-pages' README: Poilus
// annotates the will, not the printed form, stamps or clerks' notes). Given the ground truth's
// region outlines, a detected line that is not right and lies mostly (>= 50 %) outside every
// annotated region is flagged `outside`: the report shows precision with and without them, so
// writing the ground truth never looked at is told apart from lines drawn where it did look.
import type { Point } from '../../src/recognition/page/page-result.ts';
import { readingOrderAgreement } from './layout-metrics.ts';

export interface LineCoverage {
  /** Per ground-truth line: found (>= 50 % of its pixels inside detected lines). */
  found: boolean[];
  /** Per detected line: right (>= 50 % inside ground-truth lines). */
  right: boolean[];
  /** Per detected line: not right, and >= 50 % outside every annotated region (all false without region outlines). */
  outside: boolean[];
  /** Pairwise reading-order agreement of detected lines matched (by most shared pixels) to ground-truth lines; null with fewer than two matched. */
  order: number | null;
  /** Per detected line: the ground-truth line it shares most pixels with, -1 for none. */
  matches: number[];
}

const MAX_SIDE = 1000;

export function lineCoverage(
  width: number,
  height: number,
  truth: readonly Point[][],
  detected: readonly Point[][],
  annotatedRegions: readonly Point[][] = [],
): LineCoverage {
  const scale = Math.min(1, MAX_SIDE / Math.max(width, height));
  const w = Math.max(1, Math.ceil(width * scale));
  const h = Math.max(1, Math.ceil(height * scale));
  const scaled = (polygon: readonly Point[]): Point[] => polygon.map(([x, y]) => [x * scale, y * scale] as const);
  const truthPixels = truth.map((polygon) => fillPolygon(scaled(polygon), w, h));
  const detectedPixels = detected.map((polygon) => fillPolygon(scaled(polygon), w, h));
  const detectedMask = new Uint8Array(w * h);
  for (const pixels of detectedPixels) for (const index of pixels) detectedMask[index] = 1;
  // Each pixel remembers every ground-truth line over it (lines may overlap a little).
  const truthOwners = new Map<number, number[]>();
  truthPixels.forEach((pixels, line) => {
    for (const index of pixels) {
      const owners = truthOwners.get(index);
      if (owners) owners.push(line);
      else truthOwners.set(index, [line]);
    }
  });
  const found = truthPixels.map(
    (pixels) => pixels.length > 0 && pixels.filter((index) => detectedMask[index] === 1).length >= 0.5 * pixels.length,
  );
  const matches: number[] = [];
  const right = detectedPixels.map((pixels) => {
    let inside = 0;
    const shared = new Map<number, number>();
    for (const index of pixels) {
      const owners = truthOwners.get(index);
      if (!owners) continue;
      inside += 1;
      for (const owner of owners) shared.set(owner, (shared.get(owner) ?? 0) + 1);
    }
    let best = -1;
    let bestCount = 0;
    for (const [owner, count] of shared) if (count > bestCount) [best, bestCount] = [owner, count];
    matches.push(best);
    return pixels.length > 0 && inside >= 0.5 * pixels.length;
  });
  const matched = new Set(matches.filter((index) => index >= 0));
  const regions = annotatedRegions.filter((polygon) => polygon.length >= 3);
  const annotated = new Uint8Array(w * h);
  for (const polygon of regions) for (const index of fillPolygon(scaled(polygon), w, h)) annotated[index] = 1;
  const outside = detectedPixels.map(
    (pixels, line) => regions.length > 0 && !right[line] && pixels.filter((index) => annotated[index] === 0).length >= 0.5 * pixels.length,
  );
  return { found, right, outside, order: matched.size < 2 ? null : readingOrderAgreement(matches), matches };
}

/** Indexes (y * width + x) of the pixels whose centres lie inside the polygon (even-odd rule). */
export function fillPolygon(polygon: readonly Point[], width: number, height: number): number[] {
  const pixels: number[] = [];
  if (polygon.length < 3) return pixels;
  let minY = Infinity;
  let maxY = -Infinity;
  for (const [, y] of polygon) {
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
  }
  const top = Math.max(0, Math.floor(minY));
  const bottom = Math.min(height - 1, Math.ceil(maxY));
  const crossings: number[] = [];
  for (let row = top; row <= bottom; row += 1) {
    const y = row + 0.5;
    crossings.length = 0;
    for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i, i += 1) {
      const [xi, yi] = polygon[i];
      const [xj, yj] = polygon[j];
      if (yi > y !== yj > y) crossings.push(xi + ((y - yi) * (xj - xi)) / (yj - yi));
    }
    crossings.sort((a, b) => a - b);
    for (let k = 0; k + 1 < crossings.length; k += 2) {
      const from = Math.max(0, Math.ceil(crossings[k] - 0.5));
      const to = Math.min(width - 1, Math.floor(crossings[k + 1] - 0.5));
      for (let x = from; x <= to; x += 1) pixels.push(row * width + x);
    }
  }
  return pixels;
}
