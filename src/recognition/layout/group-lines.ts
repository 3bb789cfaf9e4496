// Detected boxes become text lines. On handwriting the detector often returns a
// line as several pieces (words, phrases, pieces split at a wide gap); pieces that
// sit on the same writing line, one after another, are chained into one line.
import type { Box, Point } from '../page/page-result.ts';
import { boundingBox, rectCorners, type RotatedRect } from '../page/geometry.ts';
import type { DetectedBox } from './text-detector.ts';

export interface LayoutLine {
  /** Pieces in writing order (left to right along the line). */
  fragments: DetectedBox[];
  /** Writing direction of the line (radians), the length-weighted mean of its pieces. */
  angle: number;
  /** Outline following the pieces: their top edges, then their bottom edges back. */
  polygon: Point[];
  box: Box;
  /** Left-to-right baseline, when the line came with one (uploaded or segmented); else found from the ink. */
  baseline?: Point[];
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

interface Span {
  /** Where the writing enters and leaves, in the page's writing frame (u along, v across). */
  startU: number;
  startV: number;
  endU: number;
  endV: number;
  height: number;
  boxes: DetectedBox[];
}

/**
 * Two passes: pieces close enough to be one line are chained; then chains separated by
 * a wide gap are joined when writing just above or below crosses the gap (a wide word
 * space) and neither side stands in a margin (a note beside the column stays apart).
 */
export function groupLines(boxes: readonly DetectedBox[], options: GroupOptions = DEFAULTS): LayoutLine[] {
  // Work in the frame of the page's dominant writing direction so that slightly rotated
  // scans group as well as straight ones.
  const pageAngle = dominantAngle(boxes);
  const toFrame = (x: number, y: number): [number, number] => [
    x * Math.cos(pageAngle) + y * Math.sin(pageAngle),
    -x * Math.sin(pageAngle) + y * Math.cos(pageAngle),
  ];
  const pieces: Span[] = boxes.map((box) => {
    // The middle of the piece's left and right ends: where a line enters and leaves it.
    // The direction of a short piece (a word or two) says more about slanted letters than
    // about the line: it follows the page.
    const angle = box.width >= 3 * box.height ? box.angle : pageAngle;
    const dx = (Math.cos(angle) * box.width) / 2;
    const dy = (Math.sin(angle) * box.width) / 2;
    const [startU, startV] = toFrame(box.cx - dx, box.cy - dy);
    const [endU, endV] = toFrame(box.cx + dx, box.cy + dy);
    return { startU: Math.min(startU, endU), startV, endU: Math.max(startU, endU), endV, height: Math.max(1, box.height), boxes: [box] };
  });

  const close = chain(pieces, options, (gap, height) => gap <= options.maxGap * height);

  const long = close.filter((span) => span.endU - span.startU >= 3 * span.height);
  const columnLeft = quantile(
    long.map((span) => span.startU),
    0.25,
  );
  const columnRight = quantile(
    long.map((span) => span.endU),
    0.75,
  );
  const bridged = (u: number, v: number, reach: number, except: readonly Span[]): boolean =>
    pieces.some(
      (other) =>
        !except.some((span) => span.boxes.includes(other.boxes[0])) &&
        other.startU < u &&
        other.endU > u &&
        Math.abs((other.startV + other.endV) / 2 - v) <= reach,
    );
  const joined = chain(close, options, (gap, height, left, right) => {
    if (gap > options.maxBridgedGap * height) return false;
    if (left.startU < columnLeft - height || right.endU > columnRight + height) return false;
    return bridged((left.endU + right.startU) / 2, (left.endV + right.startV) / 2, options.bridgeReach * height, [left, right]);
  });
  return joined.map((span) => makeLine(span.boxes));
}

/** Greedy left-to-right chaining: each span joins the line whose end it best continues. */
function chain(
  spans: readonly Span[],
  options: GroupOptions,
  gapAllowed: (gap: number, height: number, left: Span, right: Span) => boolean,
): Span[] {
  const sorted = [...spans].sort((a, b) => a.startU - b.startU);
  const lines: Span[] = [];
  for (const span of sorted) {
    let best: Span | null = null;
    let bestCost = Infinity;
    let small = false;
    for (const line of lines) {
      const height = (line.height + span.height) / 2;
      const gap = span.startU - line.endU;
      // A small piece (punctuation, an accent, a short word) may sit anywhere within the
      // band of the line it belongs to, even over it; pieces of like size must continue each other.
      const lower = Math.min(line.height, span.height);
      const higher = Math.max(line.height, span.height);
      const isSmall = lower < 0.5 * higher;
      if (!isSmall && gap < -0.5 * Math.min(line.endU - line.startU, span.endU - span.startU)) continue;
      if (isSmall && span.startU < line.startU) continue;
      const tolerance = isSmall ? 0.5 * higher : options.maxStep * lower;
      const step = Math.abs(span.startV - line.endV);
      if (step > tolerance) continue;
      if (gap > 0 && !gapAllowed(gap, height, line, span)) continue;
      const cost = Math.max(gap, 0) / height + (2 * step) / height;
      if (cost < bestCost) {
        bestCost = cost;
        best = line;
        small = isSmall;
      }
    }
    if (best && small && span.height < best.height && span.endU <= best.endU) {
      // A small piece within the extent of the line's last piece: that piece's crop already
      // holds its ink (a dot, an accent, a speck); read on its own it would come out after
      // the longer piece's text, out of place, or twice.
      continue;
    }
    if (best) {
      const length = best.endU - best.startU + (span.endU - span.startU);
      best.height = (best.height * (best.endU - best.startU) + span.height * (span.endU - span.startU)) / Math.max(length, 1);
      best.endU = span.endU;
      best.endV = span.endV;
      best.boxes = [...best.boxes, ...span.boxes];
    } else {
      lines.push({ ...span });
    }
  }
  return lines;
}

function quantile(values: number[], q: number): number {
  if (values.length === 0) return -Infinity;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export function makeLine(fragments: DetectedBox[]): LayoutLine {
  const totalLength = fragments.reduce((sum, fragment) => sum + fragment.width, 0);
  const angle =
    totalLength > 0 ? fragments.reduce((sum, fragment) => sum + fragment.angle * fragment.width, 0) / totalLength : fragments[0].angle;
  const corners = fragments.map((fragment) => rectCorners(fragment));
  const along = (p: Point): number => p[0] * Math.cos(angle) + p[1] * Math.sin(angle);
  // Top corners only (a lint "fix" once turned this into corners.flat(), which zigzagged every
  // polygon of a line in several pieces; the layout test checks the outline is simple).
  const top = corners.flatMap((corner) => [corner[0], corner[1]]).sort((a, b) => along(a) - along(b));
  const bottom = corners.flatMap(([, , br, bl]) => [bl, br]).sort((a, b) => along(b) - along(a));
  const polygon = fragments.length === 1 ? [...corners[0]] : [...top, ...bottom];
  return { fragments, angle, polygon, box: boundingBox(corners.flat()) };
}

function dominantAngle(boxes: readonly RotatedRect[]): number {
  const angles = boxes
    .filter((box) => box.width >= box.height)
    .map((box) => box.angle)
    .sort((a, b) => a - b);
  return angles.length === 0 ? 0 : angles[Math.floor(angles.length / 2)];
}
