// Reading order and regions, by recursive XY-cut over the lines in the frame of the
// page's writing direction:
// - a wide vertical gap (a gutter at least 1.5 line heights wide) splits columns,
//   read left to right; it wins over horizontal gaps, which in two aligned columns
//   occur at every line;
// - otherwise the block splits at the horizontal gaps between rows (top to bottom),
//   and each row band again: a marginal note beside a line is read before that line
//   when it stands left of it, after it when it stands right;
// - consecutive lines that continue one another (overlapping horizontally, no blank
//   line between) share a region; a note in the margin becomes a region of its own.
import type { LayoutLine } from './group-lines.ts';

export type RegionType = 'paragraph' | 'marginalia';

export interface LayoutRegion {
  type: RegionType;
  lines: LayoutLine[];
}

interface Item {
  line: LayoutLine;
  left: number;
  right: number;
  top: number;
  bottom: number;
  /** The middle half of the line across its direction: rows are separated by these. */
  coreTop: number;
  coreBottom: number;
}

interface Interval {
  start: number;
  end: number;
}

const COLUMN_GUTTER = 1.5;
const PARAGRAPH_GAP = 1.0;

export function orderRegions(lines: readonly LayoutLine[]): LayoutRegion[] {
  if (lines.length === 0) return [];
  const angle = median(lines.map((line) => line.angle));
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const items = lines.map((line): Item => {
    const us: number[] = [];
    const vs: number[] = [];
    let coreTop = Infinity;
    let coreBottom = -Infinity;
    for (const [x, y] of line.polygon) {
      us.push(x * cos + y * sin);
      vs.push(-x * sin + y * cos);
    }
    for (const fragment of line.fragments) {
      const v = -fragment.cx * sin + fragment.cy * cos;
      coreTop = Math.min(coreTop, v - fragment.height / 4);
      coreBottom = Math.max(coreBottom, v + fragment.height / 4);
    }
    return { line, left: Math.min(...us), right: Math.max(...us), top: Math.min(...vs), bottom: Math.max(...vs), coreTop, coreBottom };
  });
  const lineHeight = median(lines.flatMap((line) => line.fragments.map((fragment) => fragment.height)));
  const groups = cut(items, lineHeight);
  const main = mainColumn(items);
  return groups.map((group) => ({ type: isMarginal(group, main) ? 'marginalia' : 'paragraph', lines: group.map((item) => item.line) }));
}

function cut(items: Item[], lineHeight: number): Item[][] {
  if (items.length === 1) return [items];
  const vertical = gaps(items.map((item) => ({ start: item.left, end: item.right })));
  const horizontal = gaps(items.map((item) => ({ start: item.coreTop, end: item.coreBottom })));
  const widest = Math.max(0, ...vertical.map((gap) => gap.end - gap.start));
  if (vertical.length > 0 && (widest >= COLUMN_GUTTER * lineHeight || horizontal.length === 0)) {
    return split(items, vertical, (item) => (item.left + item.right) / 2).flatMap((part) => cut(part, lineHeight));
  }
  if (horizontal.length > 0) {
    const bands = split(items, horizontal, (item) => (item.coreTop + item.coreBottom) / 2);
    return joinContinuing(bands.map((band) => cut(band, lineHeight)), lineHeight);
  }
  // Rows that overlap everywhere (e.g. touching, crooked lines): top to bottom by the middle of each line.
  const sorted = [...items].sort((a, b) => a.coreTop + a.coreBottom - (b.coreTop + b.coreBottom) || a.left - b.left);
  return joinContinuing(
    sorted.map((item) => [[item]]),
    lineHeight,
  );
}

/** Gaps between the merged intervals, in increasing order. */
function gaps(intervals: Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const result: Interval[] = [];
  let end = sorted[0].end;
  for (const interval of sorted.slice(1)) {
    if (interval.start > end) result.push({ start: end, end: interval.start });
    end = Math.max(end, interval.end);
  }
  return result;
}

function split(items: Item[], cuts: Interval[], position: (item: Item) => number): Item[][] {
  const parts: Item[][] = Array.from({ length: cuts.length + 1 }, () => []);
  for (const item of items) {
    const p = position(item);
    let index = 0;
    while (index < cuts.length && p > cuts[index].start) index += 1;
    parts[index].push(item);
  }
  return parts.filter((part) => part.length > 0);
}

/** Concatenates the groups of consecutive bands, merging a band's first group into the previous band's last when it continues it. */
function joinContinuing(bands: Item[][][], lineHeight: number): Item[][] {
  const result: Item[][] = [];
  for (const band of bands) {
    for (const [index, group] of band.entries()) {
      const previous = result[result.length - 1];
      if (index === 0 && previous && continues(previous[previous.length - 1], group[0], lineHeight)) previous.push(...group);
      else result.push([...group]);
    }
  }
  return result;
}

function continues(above: Item, below: Item, lineHeight: number): boolean {
  const overlap = Math.min(above.right, below.right) - Math.max(above.left, below.left);
  const narrower = Math.min(above.right - above.left, below.right - below.left);
  return overlap >= 0.5 * narrower && below.top - above.bottom <= PARAGRAPH_GAP * lineHeight;
}

/** The horizontal span most lines share: median left edge to median right edge. */
function mainColumn(items: Item[]): Interval {
  return { start: median(items.map((item) => item.left)), end: median(items.map((item) => item.right)) };
}

function isMarginal(group: Item[], main: Interval): boolean {
  const left = Math.min(...group.map((item) => item.left));
  const right = Math.max(...group.map((item) => item.right));
  const overlap = Math.min(right, main.end) - Math.max(left, main.start);
  return overlap < 0.5 * (right - left);
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
