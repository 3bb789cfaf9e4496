// Detected boxes become text lines. On handwriting the detector often returns a
// line as several pieces (words, phrases, pieces split at a wide gap); pieces that
// sit on the same writing line, one after another, are chained into one line.
import type { Box, Point } from '../page-result.ts';
import { boundingBox, rectCorners, type RotatedRect } from './geometry.ts';
import type { DetectedBox } from './text-detector.ts';

export interface LayoutLine {
  /** Pieces in writing order (left to right along the line). */
  fragments: DetectedBox[];
  /** Writing direction of the line (radians), the length-weighted mean of its pieces. */
  angle: number;
  /** Outline following the pieces: their top edges, then their bottom edges back. */
  polygon: Point[];
  box: Box;
}

export interface GroupOptions {
  /** Largest gap between two pieces of one line, in line heights. */
  maxGap: number;
  /** Largest offset across the line between two pieces, in line heights. */
  maxOffset: number;
}

const DEFAULTS: GroupOptions = { maxGap: 1.2, maxOffset: 0.45 };

export function groupLines(boxes: readonly DetectedBox[], options: GroupOptions = DEFAULTS): LayoutLine[] {
  // Work in the frame of the page's dominant writing direction so that slightly rotated
  // scans group as well as straight ones.
  const pageAngle = dominantAngle(boxes);
  const cos = Math.cos(pageAngle);
  const sin = Math.sin(pageAngle);
  const frame = boxes.map((box) => ({
    box,
    u: box.cx * cos + box.cy * sin,
    v: -box.cx * sin + box.cy * cos,
    halfLength: halfExtentAlong(box, pageAngle),
    height: Math.max(1, box.height),
  }));
  frame.sort((a, b) => a.u - a.halfLength - (b.u - b.halfLength));

  const chains: (typeof frame)[] = [];
  for (const piece of frame) {
    let best: (typeof frame) | null = null;
    let bestCost = Infinity;
    for (const chain of chains) {
      const last = chain[chain.length - 1];
      const height = Math.max(last.height, piece.height);
      if (Math.min(last.height, piece.height) < 0.4 * height) continue;
      const gap = piece.u - piece.halfLength - (last.u + last.halfLength);
      if (gap > options.maxGap * height || gap < -Math.min(last.halfLength, piece.halfLength)) continue;
      // Where the last piece's own direction says the line goes at the new piece.
      const expectedV = last.v + Math.tan(last.box.angle - pageAngle) * (piece.u - last.u);
      const offset = Math.abs(piece.v - expectedV);
      if (offset > options.maxOffset * height) continue;
      const cost = Math.max(gap, 0) / height + offset / height;
      if (cost < bestCost) {
        bestCost = cost;
        best = chain;
      }
    }
    if (best) best.push(piece);
    else chains.push([piece]);
  }
  return chains.map((chain) => makeLine(chain.map((item) => item.box)));
}

export function makeLine(fragments: DetectedBox[]): LayoutLine {
  const totalLength = fragments.reduce((sum, fragment) => sum + fragment.width, 0);
  const angle = totalLength > 0 ? fragments.reduce((sum, fragment) => sum + fragment.angle * fragment.width, 0) / totalLength : fragments[0].angle;
  const corners = fragments.map((fragment) => rectCorners(fragment));
  const along = (p: Point): number => p[0] * Math.cos(angle) + p[1] * Math.sin(angle);
  const top = corners.flatMap(([tl, tr]) => [tl, tr]).sort((a, b) => along(a) - along(b));
  const bottom = corners.flatMap(([, , br, bl]) => [bl, br]).sort((a, b) => along(b) - along(a));
  const polygon = fragments.length === 1 ? [...corners[0]] : [...top, ...bottom];
  return { fragments, angle, polygon, box: boundingBox(corners.flat()) };
}

function dominantAngle(boxes: readonly RotatedRect[]): number {
  const angles = boxes.filter((box) => box.width >= box.height).map((box) => box.angle).sort((a, b) => a - b);
  return angles.length === 0 ? 0 : angles[Math.floor(angles.length / 2)];
}

function halfExtentAlong(box: RotatedRect, angle: number): number {
  const delta = box.angle - angle;
  return (Math.abs(Math.cos(delta)) * box.width + Math.abs(Math.sin(delta)) * box.height) / 2;
}
