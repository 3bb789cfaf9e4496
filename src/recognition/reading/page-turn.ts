// Pages scanned upside down or sideways. The layout finds a turned page's lines where they are (or
// pieces of them), but the recognizers read them as noise (72-85 % CER on the fixture and val pages
// turned by 180°). The main recognizer reads the middle of the page's widest lines as they lie and
// turned by 180° (two sides from one layout); where neither reads well, or the writing runs across
// the page, the page turned by a quarter is laid out and read both ways too (the other two sides).
// The side read surest wins, the page as it lies unless another side beats it by TURN_MARGIN; the
// page is then laid out and read turned upright (recognize-page.ts). docs/recognition.md,
// "Pages upside down or sideways"; `npm run bench:turned-pages`.
import type { RotatedRect } from '../page/geometry.ts';
import type { LayoutLine } from '../layout/group-lines.ts';

/** The clockwise turn that makes a page upright. */
export type PageTurn = 0 | 90 | 180 | 270;

/** How many of the page's widest lines are read both ways. */
export const TURN_PROBE_LINES = 4;
/** A probe line is read over at most this many line heights around its centre (a few words tell). */
const TURN_PROBE_HEIGHTS = 12;
/** Another side must read surer than the page as it lies by more than this (mean character confidence). */
const TURN_MARGIN = 0.03;
/** Below this, the page's two sides from its own layout both read badly: the quarter turns are tried. */
const QUARTER_CHECK_BELOW = 0.75;

/** How surely one side of the page reads: the mean confidence of its probe lines. */
export interface SideReading {
  turn: PageTurn;
  confidence: number;
}

/** The middle of a probe line, at most TURN_PROBE_HEIGHTS line heights long. */
export function probeSpan(rect: RotatedRect): RotatedRect {
  return { ...rect, width: Math.min(rect.width, TURN_PROBE_HEIGHTS * rect.height) };
}

/**
 * Whether most of the page's writing (by line width) runs along the page, within 45° of
 * horizontal either way. The lines of a page scanned sideways come from the detector's upright
 * boxes (docs/recognition.md, "Detection"); reading them both ways tells nothing of its side.
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

/** Whether the quarter turns are worth a second layout: the page's own sides (none when its writing runs across) both read badly. */
export function quarterTurnsWorthTrying(sides: readonly SideReading[]): boolean {
  return sides.every((side) => side.confidence < QUARTER_CHECK_BELOW);
}

/**
 * The side that reads surest. The page's own layout tells two sides: upside down (180) wins over
 * the page as it lies (0) when it reads surer by more than the margin. The quarter turns (90, 270),
 * from a second layout of other lines, win over that only by more than the margin again; without
 * sides of its own (the writing runs across the page), the surer quarter turn wins.
 */
export function likeliestTurn(sides: readonly SideReading[]): PageTurn {
  const confidenceOf = (turn: PageTurn): number | undefined => sides.find((side) => side.turn === turn)?.confidence;
  const asItLies = confidenceOf(0);
  const upsideDown = confidenceOf(180) ?? Number.NEGATIVE_INFINITY;
  const own: SideReading | null =
    asItLies === undefined
      ? null
      : upsideDown > asItLies + TURN_MARGIN
        ? { turn: 180, confidence: upsideDown }
        : { turn: 0, confidence: asItLies };
  let quarter: SideReading | null = null;
  for (const side of sides)
    if ((side.turn === 90 || side.turn === 270) && (quarter === null || side.confidence > quarter.confidence)) quarter = side;
  if (quarter && (own === null || quarter.confidence > own.confidence + TURN_MARGIN)) return quarter.turn;
  return own?.turn ?? 0;
}
