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
  /**
   * Largest gap, in line heights, when writing in the rows just above or below crosses
   * it: then it is a wide word space, not the gutter between columns or a margin.
   */
  maxBridgedGap: number;
  /** How far above or below the bridging writing may be, in line heights. */
  bridgeReach: number;
  /** Largest step across the writing direction from one piece's end to the next one's start, in line heights. */
  maxStep: number;
}

const DEFAULTS: GroupOptions = { maxGap: 1.5, maxBridgedGap: 4, bridgeReach: 2.5, maxStep: 0.35 };

export function groupLines(boxes: readonly DetectedBox[], options: GroupOptions = DEFAULTS): LayoutLine[] {
  // Work in the frame of the page's dominant writing direction so that slightly rotated
  // scans group as well as straight ones.
  const pageAngle = dominantAngle(boxes);
  const toFrame = (x: number, y: number): [number, number] => [x * Math.cos(pageAngle) + y * Math.sin(pageAngle), -x * Math.sin(pageAngle) + y * Math.cos(pageAngle)];
  const pieces = boxes.map((box) => {
    // The middle of the piece's left and right ends: where a line enters and leaves it.
    // The direction of a short piece (a word or two) says more about slanted letters than
    // about the line: it follows the page.
    const angle = box.width >= 3 * box.height ? box.angle : pageAngle;
    const dx = (Math.cos(angle) * box.width) / 2;
    const dy = (Math.sin(angle) * box.width) / 2;
    const [startU, startV] = toFrame(box.cx - dx, box.cy - dy);
    const [endU, endV] = toFrame(box.cx + dx, box.cy + dy);
    return { box, startU: Math.min(startU, endU), startV, endU: Math.max(startU, endU), endV, height: Math.max(1, box.height) };
  });
  pieces.sort((a, b) => a.startU - b.startU);
  const bridged = (u: number, v: number, reach: number, except: readonly (typeof pieces)[number][]): boolean =>
    pieces.some((other) => !except.includes(other) && other.startU < u && other.endU > u && Math.abs((other.startV + other.endV) / 2 - v) <= reach);

  const chains: (typeof pieces)[] = [];
  for (const piece of pieces) {
    let best: (typeof pieces) | null = null;
    let bestCost = Infinity;
    for (const chain of chains) {
      const last = chain[chain.length - 1];
      const height = (last.height + piece.height) / 2;
      if (Math.min(last.height, piece.height) < 0.4 * Math.max(last.height, piece.height)) continue;
      const gap = piece.startU - last.endU;
      if (gap > options.maxBridgedGap * height || gap < -0.5 * Math.min(last.endU - last.startU, piece.endU - piece.startU)) continue;
      const step = Math.abs(piece.startV - last.endV);
      if (step > options.maxStep * Math.min(last.height, piece.height)) continue;
      if (gap > options.maxGap * height && !bridged((last.endU + piece.startU) / 2, (last.endV + piece.startV) / 2, options.bridgeReach * height, [last, piece])) continue;
      const cost = Math.max(gap, 0) / height + (2 * step) / height;
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
