// Pages scanned upside down. The layout finds a turned page's lines where they are, but the
// recognizers read them as noise (72-85 % CER on the fixture and val pages turned by 180°). The main
// recognizer reads the middle of the page's widest lines as they lie and turned by 180°; a page whose
// turned readings are surer is laid out and read again turned upright (recognize-page.ts). On the
// 62 fixture and htr-pages val pages, each read as it lies and turned, four probe lines told every
// page's side, and no upright page was turned (`npm run bench:upside-down`, docs/recognition.md,
// "Pages upside down"). Quarter turns are not detected.
import type { RotatedRect } from '../layout/geometry.ts';
import type { LayoutLine } from '../layout/group-lines.ts';

/** How many of the page's widest lines are read both ways. */
export const TURN_PROBE_LINES = 4;
/** A probe line is read over at most this many line heights around its centre (a few words tell). */
const TURN_PROBE_HEIGHTS = 12;
/** The turned readings' mean confidence must exceed the upright one's by more than this. */
const TURN_MARGIN = 0.03;

/** The middle of a probe line, at most TURN_PROBE_HEIGHTS line heights long. */
export function probeSpan(rect: RotatedRect): RotatedRect {
  return { ...rect, width: Math.min(rect.width, TURN_PROBE_HEIGHTS * rect.height) };
}

/** Whether the probe lines read better turned by 180° (`upright[i]` and `turned[i]`: line i's mean character confidence each way). */
export function readsBetterTurned(upright: readonly number[], turned: readonly number[]): boolean {
  if (upright.length === 0 || upright.length !== turned.length) return false;
  const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
  return mean(turned) - mean(upright) > TURN_MARGIN;
}

/**
 * Whether most of the page's writing (by line width) runs along the page, within 45° of
 * horizontal either way: the lines of a page scanned sideways come from the detector's upright
 * boxes (docs/recognition.md, "Detection"), and turning it by 180° would leave it sideways.
 */
export function writesAlong(lines: readonly Pick<LayoutLine, 'angle'>[], widths: readonly number[]): boolean {
  let along = 0;
  let total = 0;
  lines.forEach((line, index) => {
    total += widths[index];
    if (Math.abs(Math.sin(line.angle)) <= Math.SQRT1_2) along += widths[index];
  });
  return total > 0 && along > total / 2;
}
