// Natural ordering of ZIP entry paths, which defines page order: `2.jpg` before `10.jpg`,
// `part 2/1.jpg` before `part 10/1.jpg`. Deterministic and locale-independent (the same
// upload gives the same page order on every machine).
//
// Paths are compared segment by segment (split on `/`), so a directory's name decides the
// order of everything inside it. Within a segment, runs of ASCII digits compare as numbers
// (of any length) and other runs compare case-insensitively by code point; numbers sort
// before text at the same position. Ties fall back to fewer leading zeros first, then to
// case, then to the plain code-point order, so no two distinct paths compare equal.

const CHUNK = /(\d+)|(\D+)/g;

function chunks(segment: string): string[] {
  return segment.match(CHUNK) ?? [];
}

function isDigits(chunk: string): boolean {
  const code = chunk.charCodeAt(0);
  return code >= 48 && code <= 57;
}

function compareNumbers(a: string, b: string): number {
  const x = a.replace(/^0+/, '');
  const y = b.replace(/^0+/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}

function compareCodePoints(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Natural comparison of two names (no `/` handling). */
export function compareNatural(a: string, b: string): number {
  return compareChunked({ raw: a, chunks: chunks(a) }, { raw: b, chunks: chunks(b) });
}

/** A path segment with its runs of digits and of other characters, cut once for a whole sort. */
interface Segment {
  raw: string;
  chunks: string[];
}

function compareChunked({ raw: a, chunks: left }: Segment, { raw: b, chunks: right }: Segment): number {
  const shared = Math.min(left.length, right.length);
  let tieBreak = 0;
  for (let index = 0; index < shared; index += 1) {
    const x = left[index];
    const y = right[index];
    const xDigits = isDigits(x);
    const yDigits = isDigits(y);
    if (xDigits !== yDigits) return xDigits ? -1 : 1;
    if (xDigits) {
      const byValue = compareNumbers(x, y);
      if (byValue !== 0) return byValue;
      if (tieBreak === 0) tieBreak = x.length - y.length;
    } else {
      const byText = compareCodePoints(x.toLowerCase(), y.toLowerCase());
      if (byText !== 0) return byText;
      if (tieBreak === 0) tieBreak = compareCodePoints(x, y);
    }
  }
  if (left.length !== right.length) return left.length - right.length;
  return tieBreak !== 0 ? Math.sign(tieBreak) : compareCodePoints(a, b);
}

const segmentsOf = (path: string): Segment[] => path.split('/').map((raw) => ({ raw, chunks: chunks(raw) }));

function compareSegments(left: Segment[], right: Segment[]): number {
  const shared = Math.min(left.length, right.length);
  for (let index = 0; index < shared; index += 1) {
    const order = compareChunked(left[index], right[index]);
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

/** Natural comparison of slash-separated paths, segment by segment. */
export function comparePathsNaturally(a: string, b: string): number {
  return compareSegments(segmentsOf(a), segmentsOf(b));
}

/** The items in the natural order of their paths; each path is cut into segments and runs once, not at every comparison. */
export function sortPathsNaturally<T>(items: readonly T[], pathOf: (item: T) => string): T[] {
  return items
    .map((item) => ({ item, segments: segmentsOf(pathOf(item)) }))
    .sort((x, y) => compareSegments(x.segments, y.segments))
    .map(({ item }) => item);
}
