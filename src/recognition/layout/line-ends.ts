// Line ends from a segmenter's ends map (a blob where a baseline starts or stops, kraken's
// separators): where one line stops and another starts on the same level a short gap later (a
// margin note beside a line, a page number at the end of the first line), the baseline map alone
// draws one continuous line; the ends map says where to cut it.
//
// A baseline piece is cut where the ends map rises to `endThreshold` along it away from its own
// ends (within `endMargin` interlines of a piece's end, a blob is that end's own); and two pieces
// are not joined across a gap holding such a blob. Coordinates are map pixel indices, as in
// baseline-tracks.ts.
import type { Piece } from './baseline-tracks.ts';

export interface LineEndSettings {
  /** Probability in the ends map at which a line ends. */
  endThreshold: number;
  /** A blob this close (interlines) to a piece's end belongs to that end and cuts nothing. */
  endMargin: number;
}

/** Rows above and below the baseline where a line's end blob is looked for. */
const REACH = 2;

/** The strongest end probability at column x within REACH rows of y. */
function endAt(ends: Float32Array, width: number, height: number, x: number, y: number): number {
  if (x < 0 || x >= width) return 0;
  const yi = Math.round(y);
  let best = 0;
  for (let row = Math.max(0, yi - REACH); row <= Math.min(height - 1, yi + REACH); row += 1) best = Math.max(best, ends[row * width + x]);
  return best;
}

/**
 * Pieces cut at the end blobs inside them, at each blob's middle column (the end of the line
 * before it, the next piece starting one column on): what lies between two blobs close together
 * (the gap between a note and its line) becomes its own short piece, which the length filters drop.
 */
export function splitAtLineEnds(
  pieces: readonly Piece[],
  ends: Float32Array,
  width: number,
  height: number,
  interline: number,
  settings: LineEndSettings,
): Piece[] {
  const margin = Math.round(settings.endMargin * interline);
  const result: Piece[] = [];
  for (const piece of pieces) {
    const n = piece.ys.length;
    let start = 0;
    for (let i = margin; i < n - margin; i += 1) {
      if (endAt(ends, width, height, piece.x0 + i, piece.ys[i]) < settings.endThreshold) continue;
      let stop = i;
      while (stop + 1 < n && endAt(ends, width, height, piece.x0 + stop + 1, piece.ys[stop + 1]) >= settings.endThreshold) stop += 1;
      const middle = (i + stop) >> 1;
      result.push(slice(piece, start, middle + 1));
      start = middle + 1;
      i = stop;
    }
    if (start === 0) result.push(piece);
    else if (start < n) result.push(slice(piece, start, n));
  }
  return result;
}

/** Whether a line end lies on the straight way from (x0, y0) to (x1, y1), both ends included (a blob at a piece's end stops it there). */
export function endBetween(
  ends: Float32Array,
  width: number,
  height: number,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  threshold: number,
): boolean {
  for (let x = x0; x <= x1; x += 1) {
    if (endAt(ends, width, height, x, y0 + ((y1 - y0) * (x - x0)) / (x1 - x0)) >= threshold) return true;
  }
  return false;
}

function slice(piece: Piece, from: number, to: number): Piece {
  return { x0: piece.x0 + from, ys: piece.ys.subarray(from, to), peak: piece.peak };
}
