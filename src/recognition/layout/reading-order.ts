// Reading order and regions, by recursive XY-cut over the lines in the frame of the
// page's writing direction:
// - a wide vertical gap (a gutter at least 1.5 line heights wide) between parts of
//   comparable width splits columns, read left to right; it wins over horizontal gaps,
//   which in two aligned columns occur at every line (a narrow strip beside the text is
//   a margin, not a column);
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
const COLUMN_SHARE = 0.4;
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
  const margins = {
    left: quantile(
      items.map((item) => item.left),
      0.2,
    ),
    right: quantile(
      items.map((item) => item.right),
      0.8,
    ),
  };
  const totalLength = items.reduce((sum, item) => sum + item.right - item.left, 0);
  return groups.map((group) => ({
    type: isMarginal(group, margins, totalLength) ? 'marginalia' : 'paragraph',
    lines: group.map((item) => item.line),
  }));
}

function cut(items: Item[], lineHeight: number): Item[][] {
  if (items.length === 1) return [items];
  const vertical = gaps(items.map((item) => ({ start: item.left, end: item.right })));
  const horizontal = gaps(items.map((item) => ({ start: item.coreTop, end: item.coreBottom })));
  const widest = Math.max(0, ...vertical.map((gap) => gap.end - gap.start));
  if (vertical.length > 0) {
    const parts = split(items, vertical, (item) => (item.left + item.right) / 2);
    if (horizontal.length === 0 || (widest >= COLUMN_GUTTER * lineHeight && areColumns(parts)))
      return parts.flatMap((part) => cut(part, lineHeight));
  }
  if (horizontal.length > 0) {
    const bands = split(items, horizontal, (item) => (item.coreTop + item.coreBottom) / 2);
    return joinContinuing(
      bands.map((band) => cut(band, lineHeight)),
      lineHeight,
    );
  }
  // Rows that overlap everywhere (e.g. touching, crooked lines): top to bottom by the middle of each line.
  const sorted = [...items].sort((a, b) => a.coreTop + a.coreBottom - (b.coreTop + b.coreBottom) || a.left - b.left);
  return joinContinuing(
    sorted.map((item) => [[item]]),
    lineHeight,
  );
}

/**
 * Parts beside each other are columns when each is at least COLUMN_SHARE as wide as the
 * widest; a narrow strip beside the text is a margin, whose notes are read row by row
 * with the text they stand beside.
 */
function areColumns(parts: Item[][]): boolean {
  const widths = parts.map((part) => Math.max(...part.map((item) => item.right)) - Math.min(...part.map((item) => item.left)));
  const widest = Math.max(...widths);
  return widths.every((width) => width >= COLUMN_SHARE * widest);
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

/** A few short lines standing outside the span where most lines start and end. */
function isMarginal(group: Item[], margins: { left: number; right: number }, totalLength: number): boolean {
  const length = group.reduce((sum, item) => sum + item.right - item.left, 0);
  if (group.length > 3 || length > 0.1 * totalLength) return false;
  const centre = (Math.min(...group.map((item) => item.left)) + Math.max(...group.map((item) => item.right))) / 2;
  return centre < margins.left || centre > margins.right;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
