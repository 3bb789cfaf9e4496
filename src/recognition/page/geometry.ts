// Plane geometry for layout: convex hulls, minimum-area rotated rectangles,
// polygons. Coordinates are pixels, y grows downwards.
import type { Box, Point } from './page-result.ts';

/**
 * A rotated rectangle. `angle` is the direction of the text (radians, 0 = left to right,
 * positive turns clockwise on the page); `width` runs along it, `height` across it.
 */
export interface RotatedRect {
  cx: number;
  cy: number;
  width: number;
  height: number;
  angle: number;
}

/** Andrew's monotone chain; returns the hull counter-clockwise (in y-down terms, clockwise on screen), no repeats. */
export function convexHull(points: readonly Point[]): Point[] {
  const sorted = [...points].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (sorted.length <= 2) return sorted;
  const cross = (o: Point, a: Point, b: Point): number => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower: Point[] = [];
  for (const point of sorted) {
    while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], point) <= 0) lower.pop();
    lower.push(point);
  }
  const upper: Point[] = [];
  for (let i = sorted.length - 1; i >= 0; i -= 1) {
    const point = sorted[i];
    while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], point) <= 0) upper.pop();
    upper.push(point);
  }
  lower.pop();
  upper.pop();
  return [...lower, ...upper];
}

/** The rotated rectangle of least area around a convex hull (rotating calipers over its edges). */
export function minAreaRect(hull: readonly Point[]): RotatedRect {
  if (hull.length === 0) return { cx: 0, cy: 0, width: 0, height: 0, angle: 0 };
  if (hull.length === 1) return { cx: hull[0][0], cy: hull[0][1], width: 0, height: 0, angle: 0 };
  let best: RotatedRect | null = null;
  let bestArea = Infinity;
  for (let i = 0; i < hull.length; i += 1) {
    const a = hull[i];
    const b = hull[(i + 1) % hull.length];
    const length = Math.hypot(b[0] - a[0], b[1] - a[1]);
    if (length === 0) continue;
    const ux = (b[0] - a[0]) / length;
    const uy = (b[1] - a[1]) / length;
    let minU = Infinity;
    let maxU = -Infinity;
    let minV = Infinity;
    let maxV = -Infinity;
    for (const p of hull) {
      const u = p[0] * ux + p[1] * uy;
      const v = -p[0] * uy + p[1] * ux;
      if (u < minU) minU = u;
      if (u > maxU) maxU = u;
      if (v < minV) minV = v;
      if (v > maxV) maxV = v;
    }
    const area = (maxU - minU) * (maxV - minV);
    if (area < bestArea) {
      bestArea = area;
      const cu = (minU + maxU) / 2;
      const cv = (minV + maxV) / 2;
      best = { cx: cu * ux - cv * uy, cy: cu * uy + cv * ux, width: maxU - minU, height: maxV - minV, angle: Math.atan2(uy, ux) };
    }
  }
  return normaliseRect(best ?? { cx: hull[0][0], cy: hull[0][1], width: 0, height: 0, angle: 0 });
}

/**
 * Turns a rectangle so that its `width` axis is the likely writing direction: the axis
 * nearest to horizontal, unless the box is clearly vertical (then bottom-to-top, as
 * margin notes turned on their side are usually written).
 */
export function normaliseRect(rect: RotatedRect): RotatedRect {
  let { width, height, angle } = rect;
  // Bring the angle into (-pi/4, pi/4], swapping axes for each quarter turn.
  while (angle > Math.PI / 4) {
    angle -= Math.PI / 2;
    [width, height] = [height, width];
  }
  while (angle <= -Math.PI / 4) {
    angle += Math.PI / 2;
    [width, height] = [height, width];
  }
  if (height >= 1.5 * width && height > 0) {
    angle -= Math.PI / 2;
    [width, height] = [height, width];
  }
  return { cx: rect.cx, cy: rect.cy, width, height, angle };
}

/** Corners in reading terms: top-left, top-right, bottom-right, bottom-left. */
export function rectCorners(rect: RotatedRect): [Point, Point, Point, Point] {
  const ux = Math.cos(rect.angle);
  const uy = Math.sin(rect.angle);
  const hw = rect.width / 2;
  const hh = rect.height / 2;
  const at = (su: number, sv: number): Point => [rect.cx + su * hw * ux - sv * hh * uy, rect.cy + su * hw * uy + sv * hh * ux];
  return [at(-1, -1), at(1, -1), at(1, 1), at(-1, 1)];
}

export function boundingBox(points: readonly Point[]): Box {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const [x, y] of points) {
    if (x < minX) minX = x;
    if (y < minY) minY = y;
    if (x > maxX) maxX = x;
    if (y > maxY) maxY = y;
  }
  if (minX === Infinity) return { x: 0, y: 0, width: 0, height: 0 };
  return { x: minX, y: minY, width: maxX - minX, height: maxY - minY };
}

/** Rounds to whole pixels and keeps the points inside the page. */
export function clampPolygon(points: readonly Point[], width: number, height: number): Point[] {
  return points.map(([x, y]) => [Math.round(Math.min(Math.max(x, 0), width)), Math.round(Math.min(Math.max(y, 0), height))] as const);
}

/** Intersection of two boxes (null when they do not overlap). */
export function intersectBoxes(a: Box, b: Box): Box | null {
  const x = Math.max(a.x, b.x);
  const y = Math.max(a.y, b.y);
  const right = Math.min(a.x + a.width, b.x + b.width);
  const bottom = Math.min(a.y + a.height, b.y + b.height);
  if (right <= x || bottom <= y) return null;
  return { x, y, width: right - x, height: bottom - y };
}

/**
 * The smallest rectangle at `angle` that holds every corner of `rects`: a whole text line
 * from its pieces, to be read as one crop.
 */
export function enclosingRect(rects: readonly RotatedRect[], angle: number): RotatedRect {
  return enclosingRectOfPoints(rects.flatMap(rectCorners), angle);
}

/** The smallest rectangle at `angle` around `points`. */
export function enclosingRectOfPoints(points: readonly Point[], angle: number): RotatedRect {
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  let minU = Infinity;
  let maxU = -Infinity;
  let minV = Infinity;
  let maxV = -Infinity;
  for (const [x, y] of points) {
    const u = x * cos + y * sin;
    const v = -x * sin + y * cos;
    minU = Math.min(minU, u);
    maxU = Math.max(maxU, u);
    minV = Math.min(minV, v);
    maxV = Math.max(maxV, v);
  }
  const u = (minU + maxU) / 2;
  const v = (minV + maxV) / 2;
  return { cx: u * cos - v * sin, cy: u * sin + v * cos, width: maxU - minU, height: maxV - minV, angle };
}
