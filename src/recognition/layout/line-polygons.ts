// Outline polygons around vectorised baselines. At points along a baseline the line's
// region is walked up and down in the region map; regions of adjacent lines often merge
// there, so each walk is also capped by the neighbouring baselines: upwards at most
// `ascentShare` of the way to the baseline above, downwards at most the rest of the way to
// the baseline below. Two neighbouring polygons therefore do not overlap (but for the
// simplification's tolerance, and beyond the baselines' ends), and a polygon never reaches its
// neighbour's baseline. Coordinates are pixel indices, as in baseline-tracks.ts.
import type { Point } from '../page/page-result.ts';
import type { Piece } from './baseline-tracks.ts';

export interface PolygonSettings {
  /** A pixel is inside a line's region when its region probability is at least this. */
  regionThreshold: number;
  /** Largest extent above and below the baseline, in interlines. */
  maxAscent: number;
  maxDescent: number;
  /** Extents where the region map holds nothing at the baseline, in interlines. */
  fallbackAscent: number;
  fallbackDescent: number;
  /** Share of the distance to the baseline above that the line may take (the rest belongs to the line above). */
  ascentShare: number;
  /** How far the outline may reach beyond a baseline's ends where the region goes on, in interlines. */
  endExtension: number;
  /** Douglas–Peucker tolerance (px) for baselines and outlines. */
  simplifyTolerance: number;
}

/** Columns between the points where the extents are measured. */
const STEP = 2;
/** Extents are median-filtered over this many points. */
const MEDIAN_WINDOW = 5;
/** Smallest extents wherever the neighbours leave room, in interlines (the body of the writing). */
const MIN_ASCENT = 0.3;
const MIN_DESCENT = 0.15;

/** One closed outline (upper contour left to right, lower contour back) per line. */
export function linePolygons(
  lines: readonly Piece[],
  region: Float32Array,
  width: number,
  height: number,
  interline: number,
  settings: PolygonSettings,
): Point[][] {
  const margin = Math.round(settings.endExtension * interline);
  const at = (x: number, y: number): number => {
    const yi = Math.round(y);
    if (x < 0 || x >= width || yi < 0 || yi >= height) return 0;
    return region[yi * width + x];
  };
  const threshold = settings.regionThreshold;
  return lines.map((line, index) => {
    const n = line.ys.length;
    const xs: number[] = [];
    for (let i = 0; i < n - 1; i += STEP) xs.push(line.x0 + i);
    xs.push(line.x0 + n - 1);
    const ups: number[] = [];
    const downs: number[] = [];
    const capsUp: number[] = [];
    const capsDown: number[] = [];
    for (const x of xs) {
      const yb = line.ys[x - line.x0];
      let above = -Infinity;
      let below = Infinity;
      for (let other = 0; other < lines.length; other += 1) {
        const neighbour = lines[other];
        const m = neighbour.ys.length;
        // Other lines count a little beyond their ends, where their outlines reach.
        if (other === index || x < neighbour.x0 - margin || x >= neighbour.x0 + m + margin) continue;
        const y = neighbour.ys[Math.min(m - 1, Math.max(0, x - neighbour.x0))];
        if (y < yb && y > above) above = y;
        if (y > yb && y < below) below = y;
      }
      const capUp = Math.min(settings.maxAscent * interline, settings.ascentShare * (yb - above));
      const capDown = Math.min(settings.maxDescent * interline, (1 - settings.ascentShare) * (below - yb));
      capsUp.push(capUp);
      capsDown.push(capDown);
      if (at(x, yb) < threshold && at(x, yb - 1) < threshold) {
        ups.push(settings.fallbackAscent * interline);
        downs.push(settings.fallbackDescent * interline);
        continue;
      }
      let up = 0;
      while (up + 1 <= capUp && at(x, yb - up - 1) >= threshold) up += 1;
      let down = 0;
      while (down + 1 <= capDown && at(x, yb + down + 1) >= threshold) down += 1;
      ups.push(up);
      downs.push(down);
    }
    const up = medianFilter(ups).map((value, i) => Math.max(1, Math.min(Math.max(value, MIN_ASCENT * interline), capsUp[i])));
    const down = medianFilter(downs).map((value, i) => Math.max(1, Math.min(Math.max(value, MIN_DESCENT * interline), capsDown[i])));

    // Beyond the ends, as far as the region goes on along the line's direction.
    const reach = Math.round(settings.endExtension * interline);
    const body = 0.3 * interline;
    const span = Math.min(n - 1, 8);
    const slopeLeft = span > 0 ? (line.ys[span] - line.ys[0]) / span : 0;
    const slopeRight = span > 0 ? (line.ys[n - 1] - line.ys[n - 1 - span]) / span : 0;
    const extend = (x: number, y: number, direction: number, slope: number): number => {
      let k = 0;
      while (k < reach) {
        const xk = x + direction * (k + 1);
        const yk = y + direction * slope * (k + 1);
        if (Math.max(at(xk, yk - 1), at(xk, yk - body)) < threshold) break;
        k += 1;
      }
      return Math.max(1, k);
    };
    const x1 = line.x0 + n - 1;
    const padLeft = extend(line.x0, line.ys[0], -1, slopeLeft);
    const padRight = extend(x1, line.ys[n - 1], 1, slopeRight);
    const yLeft = line.ys[0] - slopeLeft * padLeft;
    const yRight = line.ys[n - 1] + slopeRight * padRight;

    const upper: Point[] = [[line.x0 - padLeft, yLeft - up[0]]];
    const lower: Point[] = [[line.x0 - padLeft, yLeft + down[0]]];
    for (let i = 0; i < xs.length; i += 1) {
      const yb = line.ys[xs[i] - line.x0];
      upper.push([xs[i], yb - up[i]]);
      lower.push([xs[i], yb + down[i]]);
    }
    upper.push([x1 + padRight, yRight - up[up.length - 1]]);
    lower.push([x1 + padRight, yRight + down[down.length - 1]]);
    return [...simplifyPolyline(upper, settings.simplifyTolerance), ...simplifyPolyline(lower, settings.simplifyTolerance).reverse()];
  });
}

function medianFilter(values: readonly number[]): number[] {
  const half = MEDIAN_WINDOW >> 1;
  const window: number[] = [];
  return values.map((_, i) => {
    window.length = 0;
    for (let j = Math.max(0, i - half); j < Math.min(values.length, i + half + 1); j += 1) {
      // Insertion into the sorted window (five values at most).
      let k = window.length;
      window.push(values[j]);
      while (k > 0 && window[k - 1] > values[j]) {
        window[k] = window[k - 1];
        k -= 1;
      }
      window[k] = values[j];
    }
    return window[window.length >> 1];
  });
}

/** Douglas–Peucker: the fewest points, the first and last kept, within `tolerance` of the polyline. */
export function simplifyPolyline(points: readonly Point[], tolerance: number): Point[] {
  if (points.length <= 2) return [...points];
  const keep = new Uint8Array(points.length);
  keep[0] = 1;
  keep[points.length - 1] = 1;
  const stack: [number, number][] = [[0, points.length - 1]];
  while (stack.length > 0) {
    const [first, last] = stack.pop()!;
    const [ax, ay] = points[first];
    const [bx, by] = points[last];
    const dx = bx - ax;
    const dy = by - ay;
    const length = Math.hypot(dx, dy);
    let farthest = -1;
    let farthestDistance = tolerance;
    for (let i = first + 1; i < last; i += 1) {
      const [px, py] = points[i];
      const distance = length === 0 ? Math.hypot(px - ax, py - ay) : Math.abs(dx * (py - ay) - dy * (px - ax)) / length;
      if (distance > farthestDistance) {
        farthestDistance = distance;
        farthest = i;
      }
    }
    if (farthest < 0) continue;
    keep[farthest] = 1;
    stack.push([first, farthest], [farthest, last]);
  }
  return points.filter((_, i) => keep[i] === 1);
}
