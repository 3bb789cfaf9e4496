// One text line found by two layouts of a page (the segmenter's and the detector's, on a printed
// page laid out again): a line of one layout kept in place of the line of the other it matches, so
// that what was read on it need not be read again (OcrEngine.read; docs/recognition.md, "Print
// keeps the detector").
import type { Box } from '../page/page-result.ts';
import type { LayoutLine } from './group-lines.ts';

/** The least share of the two lines' joint span along the writing that both cover. */
const SHARED_SPAN = 0.9;

/**
 * `lines` with each line of `kept` in place of the one line it matches: the only one of `lines`
 * whose middle lies in the kept line's box, whose own box holds the kept line's middle, and which
 * covers with it at least SHARED_SPAN of their joint span along the writing. A kept line that
 * matches none (the other layout split it, joined it with another or missed it), or whose line
 * another kept line took, is left out. Returns the lines, in the order of `lines`, and the kept
 * lines placed.
 */
export function withLinesKept(lines: readonly LayoutLine[], kept: readonly LayoutLine[]): { lines: LayoutLine[]; placed: Set<LayoutLine> } {
  const replaced = new Map<LayoutLine, LayoutLine>();
  for (const line of kept) {
    const within = lines.filter((other) => holds(line.box, middle(other.box)));
    if (within.length !== 1) continue;
    const [match] = within;
    if (replaced.has(match) || !holds(match.box, middle(line.box))) continue;
    if (sharedSpan(line.box, match.box, Math.abs(Math.cos(line.angle)) >= Math.abs(Math.sin(line.angle))) < SHARED_SPAN) continue;
    replaced.set(match, line);
  }
  return { lines: lines.map((line) => replaced.get(line) ?? line), placed: new Set(replaced.values()) };
}

function middle(box: Box): [number, number] {
  return [box.x + box.width / 2, box.y + box.height / 2];
}

function holds(box: Box, [x, y]: [number, number]): boolean {
  return x > box.x && x < box.x + box.width && y > box.y && y < box.y + box.height;
}

/** The two boxes' overlap over their union along x (`alongX`) or y. */
function sharedSpan(a: Box, b: Box, alongX: boolean): number {
  const [startA, lengthA, startB, lengthB] = alongX ? [a.x, a.width, b.x, b.width] : [a.y, a.height, b.y, b.height];
  const overlap = Math.min(startA + lengthA, startB + lengthB) - Math.max(startA, startB);
  const union = Math.max(startA + lengthA, startB + lengthB) - Math.min(startA, startB);
  return union > 0 ? Math.max(0, overlap) / union : 0;
}
