// Vectorisation of a line segmenter's output: a baseline map and a line-region map
// (sigmoid probabilities, row-major) become text lines, each a left-to-right baseline and an
// outline polygon, in map pixel coordinates (pixel (i, j) covers [i, i+1) × [j, j+1), so the
// caller scales to page pixels by multiplying with page size / map size).
//
// 1. Baseline pieces by column-wise run tracking (baseline-tracks.ts) on the baseline map
//    thresholded at `baselineLowThreshold`, robust to lines that touch at a point; pieces far
//    steeper than the page's writing (a descender predicted as baseline between two lines)
//    are dropped.
// 2. The interline distance: the median vertical distance between neighbouring baselines
//    (from the region map's extent for a page of one line).
// 3. Pieces of one line are joined: overlapping pieces at the same height, and a piece that
//    starts after another ends, in line with it (offset and direction) and close enough: within
//    `maxJoinGap` interlines, or `maxBridgedGap` where the region map goes on across the gap (a
//    long word space or faded ink; the gutter between two columns holds no line region).
//    With an ends map (line-ends.ts), pieces are first cut at the line ends inside them, and no
//    join crosses a line end: a margin note or page number level with a line stays its own line.
// 4. Pieces with little line region under them, lines without a pixel of `baselineThreshold`
//    (hysteresis), lines too short and lines mostly gap (a chain of specks) are noise and
//    dropped; a line's ends lose half the stroke's thickness (its round caps).
// 5. Baselines are smoothed and simplified; outlines come from the region map, capped by
//    the neighbouring baselines (line-polygons.ts).
import type { Point } from '../page/page-result.ts';
import { baselinePieces, type Piece } from './baseline-tracks.ts';
import { endBetween, splitAtLineEnds, type LineEndSettings } from './line-ends.ts';
import { linePolygons, simplifyPolyline, type PolygonSettings } from './line-polygons.ts';

/** A segmenter's output maps: probabilities 0..1, row-major, `width` × `height`. */
export interface SegmentationMaps {
  width: number;
  height: number;
  baseline: Float32Array;
  region: Float32Array;
  /** Where baselines start and stop (models with an ends channel); without it lines are cut by gaps alone. */
  ends?: Float32Array;
}

/** A text line in map pixel coordinates. */
export interface VectorLine {
  /** Left to right, at least 2 points. */
  baseline: Point[];
  /** Closed ring without the closing point repeated, at least 3 points: the upper contour left to right, then the lower back. */
  polygon: Point[];
}

/** What vectorising may be told; the outline settings (region threshold, extents, simplification) are line-polygons.ts's. */
export interface VectoriseOptions extends PolygonSettings, LineEndSettings {
  /**
   * Hysteresis on the baseline map: a line needs pixels of at least `baselineThreshold`, and
   * runs on through pixels of at least `baselineLowThreshold` (faded ink).
   */
  baselineThreshold: number;
  baselineLowThreshold: number;
  /** Lines whose mean region probability along the baseline is below this are dropped as noise. */
  minRegionSupport: number;
  /** Lines shorter than this many pixels, or than `minLengthFraction` interlines, are dropped. */
  minLength: number;
  minLengthFraction: number;
  /** Lines whose pieces cover less than this share of their length are dropped (a chain of specks). */
  minCoverage: number;
  /** Pieces steeper than this (degrees) against the page's writing direction are dropped. */
  maxPieceAngle: number;
  /** Largest gap between two pieces of one line, in interlines. */
  maxJoinGap: number;
  /** Largest gap, in interlines, where the line region goes on across it. */
  maxBridgedGap: number;
  /** Largest step across the writing between the end of a piece and the start of the next, in interlines. */
  maxJoinOffset: number;
  /** Largest difference of direction (degrees) between two pieces of one line, both at least an interline long. */
  maxJoinAngle: number;
  /** Interline distance (px) when the maps give none (no two lines one above the other, no region). */
  defaultInterline: number;
  /** Baselines are sampled every this many pixels before simplifying. */
  sampleStep: number;
}

const DEFAULTS: VectoriseOptions = {
  baselineThreshold: 0.5,
  baselineLowThreshold: 0.3,
  regionThreshold: 0.5,
  minRegionSupport: 0.45,
  minLength: 8,
  minLengthFraction: 1.0,
  minCoverage: 0.4,
  maxPieceAngle: 30,
  maxJoinGap: 1,
  maxBridgedGap: 4,
  maxJoinOffset: 0.3,
  maxJoinAngle: 20,
  defaultInterline: 16,
  endThreshold: 0.5,
  endMargin: 0.5,
  maxAscent: 1,
  maxDescent: 0.5,
  fallbackAscent: 0.65,
  fallbackDescent: 0.33,
  ascentShare: 0.66,
  endExtension: 0.5,
  sampleStep: 4,
  simplifyTolerance: 1,
};

/** Pieces shorter than this (px) are not considered at all. */
const MIN_PIECE = 3;
/** Baselines are smoothed with a moving average over this many columns either side. */
const SMOOTHING = 3;
/** Region at the baseline and up to this many interlines above it counts as the line's. */
const BODY = 0.3;
/** Share of a gap that must lie in the line region for the gap to be bridged. */
const BRIDGE_SHARE = 0.75;

/** The text lines of a page from its segmentation maps, top to bottom by the middle of their baselines. */
export function vectoriseLines(maps: SegmentationMaps, options: Partial<VectoriseOptions> = {}): VectorLine[] {
  const settings: VectoriseOptions = { ...DEFAULTS, ...options };
  const { width, height, baseline, region, ends } = maps;
  if (baseline.length !== width * height || region.length !== width * height || (ends && ends.length !== width * height))
    throw new RangeError(`segmentation maps must hold ${width} × ${height} values`);
  if (width === 0 || height === 0) return [];

  const traced = baselinePieces(baseline, width, height, Math.min(settings.baselineLowThreshold, settings.baselineThreshold));
  let pieces = traced.pieces.filter((piece) => piece.ys.length >= MIN_PIECE);
  const pageSlope = dominantSlope(pieces);
  pieces = dropSteep(pieces, pageSlope, settings.maxPieceAngle);
  const interline = estimateInterline(pieces, traced.thickness, region, width, height, settings);
  pieces = joinOverlapping(pieces, interline);
  if (ends) pieces = splitAtLineEnds(pieces, ends, width, height, interline, settings);
  const support = (piece: Piece): number => regionSupport(piece, region, width, height, interline);
  const minLength = Math.max(settings.minLength, settings.minLengthFraction * interline);
  pieces = pieces.filter((piece) => support(piece) >= settings.minRegionSupport);
  const capColumns = Math.floor(traced.thickness / 2);
  const lines = joinPieces(pieces, interline, pageSlope, maps, settings)
    .filter(({ line, ink }) => ink >= settings.minCoverage * line.ys.length && line.peak >= settings.baselineThreshold)
    .map(({ line }) => trim(line, capColumns))
    .filter((line) => line.ys.length >= minLength)
    .map(smooth);

  const polygons = linePolygons(lines, region, width, height, interline, settings);
  const toMap = ([x, y]: Point): Point => [Math.min(Math.max(x + 0.5, 0), width), Math.min(Math.max(y + 0.5, 0), height)];
  const result = lines.map((line, i): VectorLine & { middle: number } => ({
    baseline: simplifyPolyline(sample(line, settings.sampleStep), settings.simplifyTolerance).map(toMap),
    polygon: dropRepeats(polygons[i].map(toMap)),
    middle: line.ys[line.ys.length >> 1],
  }));
  result.sort((a, b) => a.middle - b.middle || a.baseline[0][0] - b.baseline[0][0]);
  return result.map(({ baseline: line, polygon }) => ({ baseline: line, polygon }));
}

/** Least-squares slope of a piece. */
function slopeOf(piece: Piece, from = 0, to = piece.ys.length): number {
  const n = to - from;
  if (n < 2) return 0;
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let sxy = 0;
  for (let i = from; i < to; i += 1) {
    sx += i;
    sy += piece.ys[i];
    sxx += i * i;
    sxy += i * piece.ys[i];
  }
  const denominator = n * sxx - sx * sx;
  return denominator === 0 ? 0 : (n * sxy - sx * sy) / denominator;
}

/** The page's writing direction: the length-weighted median slope of the pieces. */
function dominantSlope(pieces: readonly Piece[]): number {
  const slopes = pieces.map((piece) => slopeOf(piece));
  const order = slopes.map((_, i) => i).sort((a, b) => slopes[a] - slopes[b]);
  const total = pieces.reduce((sum, piece) => sum + piece.ys.length, 0);
  let seen = 0;
  for (const i of order) {
    seen += pieces[i].ys.length;
    if (seen >= total / 2) return slopes[i];
  }
  return 0;
}

/** Drops pieces far steeper than the page's writing direction. */
function dropSteep(pieces: Piece[], pageSlope: number, maxAngle: number): Piece[] {
  const limit = (maxAngle * Math.PI) / 180;
  return pieces.filter((piece) => Math.abs(Math.atan(slopeOf(piece)) - Math.atan(pageSlope)) <= limit);
}

/**
 * The median vertical distance between neighbouring baselines, column by column; for a page
 * without two lines one above the other, the region's height at the baselines (a line's
 * region spans about an interline), else the default.
 */
function estimateInterline(
  pieces: readonly Piece[],
  thickness: number,
  region: Float32Array,
  width: number,
  height: number,
  settings: VectoriseOptions,
): number {
  // Specks between the lines would read as half interlines: only pieces of some length count.
  const long = pieces.filter((piece) => piece.ys.length >= settings.minLength);
  const columns: number[][] = Array.from({ length: width }, () => []);
  for (const piece of long.length > 0 ? long : pieces) for (let i = 0; i < piece.ys.length; i += 1) columns[piece.x0 + i].push(piece.ys[i]);
  // Closer than this, two pieces are one baseline's stroke split in two.
  const minSeparation = Math.max(4, 1.5 * thickness);
  const distances: number[] = [];
  for (const ys of columns) {
    if (ys.length < 2) continue;
    ys.sort((a, b) => a - b);
    for (let i = 1; i < ys.length; i += 1) if (ys[i] - ys[i - 1] >= minSeparation) distances.push(ys[i] - ys[i - 1]);
  }
  if (distances.length >= 8) return median(distances);
  const extents: number[] = [];
  for (const piece of pieces) {
    for (let i = 0; i < piece.ys.length; i += 4) {
      const x = piece.x0 + i;
      const y = Math.round(piece.ys[i]);
      if (y < 0 || y >= height || region[y * width + x] < settings.regionThreshold) continue;
      let top = y;
      while (top > 0 && region[(top - 1) * width + x] >= settings.regionThreshold) top -= 1;
      let bottom = y;
      while (bottom < height - 1 && region[(bottom + 1) * width + x] >= settings.regionThreshold) bottom += 1;
      extents.push((bottom - top + 1) / (settings.fallbackAscent + settings.fallbackDescent));
    }
  }
  if (extents.length > 0) return Math.max(minSeparation, median(extents));
  return settings.defaultInterline;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

/**
 * Pieces that overlap along the writing at the same height are one line (a stroke that split
 * for a few columns, a track that lost its line and found it again): their union, longest
 * piece first.
 */
function joinOverlapping(pieces: Piece[], interline: number): Piece[] {
  const sorted = [...pieces].sort((a, b) => b.ys.length - a.ys.length);
  const kept: Piece[] = [];
  for (const piece of sorted) {
    const end = piece.x0 + piece.ys.length;
    let merged = false;
    for (let k = 0; k < kept.length; k += 1) {
      const other = kept[k];
      const from = Math.max(piece.x0, other.x0);
      const to = Math.min(end, other.x0 + other.ys.length);
      if (to <= from) continue;
      let sum = 0;
      for (let x = from; x < to; x += 1) sum += Math.abs(piece.ys[x - piece.x0] - other.ys[x - other.x0]);
      if (sum / (to - from) >= 0.25 * interline) continue;
      kept[k] = union(other, piece);
      merged = true;
      break;
    }
    if (!merged) kept.push(piece);
  }
  return kept;
}

/** One piece over both: `first`'s ys where it has them, `second`'s elsewhere, straight across gaps. */
function union(first: Piece, second: Piece): Piece {
  const x0 = Math.min(first.x0, second.x0);
  const x1 = Math.max(first.x0 + first.ys.length, second.x0 + second.ys.length);
  const ys = new Float64Array(x1 - x0).fill(Number.NaN);
  for (let i = 0; i < second.ys.length; i += 1) ys[second.x0 - x0 + i] = second.ys[i];
  for (let i = 0; i < first.ys.length; i += 1) ys[first.x0 - x0 + i] = first.ys[i];
  let previous = -1;
  for (let i = 0; i < ys.length; i += 1) {
    if (Number.isNaN(ys[i])) continue;
    for (let g = previous + 1; g < i; g += 1) ys[g] = ys[previous] + ((ys[i] - ys[previous]) * (g - previous)) / (i - previous);
    previous = i;
  }
  return { x0, ys, peak: Math.max(first.peak, second.peak) };
}

/** Chains pieces that continue one another into lines, cheapest joins first; `ink`: the columns the pieces cover. */
function joinPieces(
  pieces: readonly Piece[],
  interline: number,
  pageSlope: number,
  { region, ends, width, height }: SegmentationMaps,
  settings: VectoriseOptions,
): { line: Piece; ink: number }[] {
  const span = Math.max(2, Math.round(interline));
  const endSlopes = pieces.map((piece) => {
    const n = piece.ys.length;
    const k = Math.min(n, span);
    return { start: slopeOf(piece, 0, k), end: slopeOf(piece, n - k, n) };
  });
  const maxAngle = (settings.maxJoinAngle * Math.PI) / 180;
  const joins: { from: number; to: number; cost: number }[] = [];
  for (let a = 0; a < pieces.length; a += 1) {
    const left = pieces[a];
    const leftEnd = left.x0 + left.ys.length - 1;
    const yEnd = left.ys[left.ys.length - 1];
    for (let b = 0; b < pieces.length; b += 1) {
      const right = pieces[b];
      const gap = right.x0 - leftEnd;
      if (b === a || gap <= 0 || gap > settings.maxBridgedGap * interline + 1) continue;
      // The direction across the gap: both ends' directions, a short piece's counting less, and the page's.
      const weightLeft = Math.min(left.ys.length, 3 * interline);
      const weightRight = Math.min(right.ys.length, 3 * interline);
      const slope =
        (weightLeft * endSlopes[a].end + weightRight * endSlopes[b].start + interline * pageSlope) / (weightLeft + weightRight + interline);
      const offset = Math.abs(right.ys[0] - (yEnd + slope * gap));
      if (offset > settings.maxJoinOffset * interline) continue;
      if (
        left.ys.length >= interline &&
        right.ys.length >= interline &&
        Math.abs(Math.atan(endSlopes[a].end) - Math.atan(endSlopes[b].start)) > maxAngle
      )
        continue;
      if (
        gap > settings.maxJoinGap * interline + 1 &&
        !bridged(leftEnd, yEnd, right.x0, right.ys[0], region, width, height, interline, settings)
      )
        continue;
      if (ends && endBetween(ends, width, height, leftEnd, yEnd, right.x0, right.ys[0], settings.endThreshold)) continue;
      joins.push({ from: a, to: b, cost: gap / interline + (2 * offset) / interline });
    }
  }
  joins.sort((p, q) => p.cost - q.cost);
  const next = new Int32Array(pieces.length).fill(-1);
  const hasPrevious = new Uint8Array(pieces.length);
  for (const join of joins) {
    if (next[join.from] >= 0 || hasPrevious[join.to]) continue;
    next[join.from] = join.to;
    hasPrevious[join.to] = 1;
  }
  const lines: { line: Piece; ink: number }[] = [];
  for (let i = 0; i < pieces.length; i += 1) {
    if (hasPrevious[i]) continue;
    let line = pieces[i];
    let ink = line.ys.length;
    for (let j = next[i]; j >= 0; j = next[j]) {
      line = union(line, pieces[j]);
      ink += pieces[j].ys.length;
    }
    lines.push({ line, ink });
  }
  return lines;
}

/** Whether the line region goes on across a gap, at the baseline or in the body of the writing above it. */
function bridged(
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  region: Float32Array,
  width: number,
  height: number,
  interline: number,
  settings: VectoriseOptions,
): boolean {
  let inside = 0;
  let count = 0;
  for (let x = x0 + 1; x < x1; x += 1) {
    const y = y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
    count += 1;
    if (
      Math.max(regionAt(region, width, height, x, y - 1), regionAt(region, width, height, x, y - BODY * interline)) >=
      settings.regionThreshold
    )
      inside += 1;
  }
  return count === 0 || inside >= BRIDGE_SHARE * count;
}

function regionAt(region: Float32Array, width: number, height: number, x: number, y: number): number {
  const yi = Math.round(y);
  if (x < 0 || x >= width || yi < 0 || yi >= height) return 0;
  return region[yi * width + x];
}

/** Mean region probability along a baseline (the larger of at the baseline and in the body above it). */
function regionSupport(piece: Piece, region: Float32Array, width: number, height: number, interline: number): number {
  let sum = 0;
  for (let i = 0; i < piece.ys.length; i += 1) {
    const x = piece.x0 + i;
    const y = piece.ys[i];
    sum += Math.max(regionAt(region, width, height, x, y), regionAt(region, width, height, x, y - BODY * interline));
  }
  return sum / piece.ys.length;
}

/** Moving average across columns, the window narrowing symmetrically at the ends (straight lines stay straight). */
function smooth(piece: Piece): Piece {
  const n = piece.ys.length;
  const ys = new Float64Array(n);
  for (let i = 0; i < n; i += 1) {
    const k = Math.min(SMOOTHING, i, n - 1 - i);
    let sum = 0;
    for (let j = i - k; j <= i + k; j += 1) sum += piece.ys[j];
    ys[i] = sum / (2 * k + 1);
  }
  return { x0: piece.x0, ys, peak: piece.peak };
}

/** The line without `columns` columns at either end: the stroke's round ends reach beyond the baseline's. */
function trim(piece: Piece, columns: number): Piece {
  if (piece.ys.length <= 2 * columns + 2) return piece;
  return { x0: piece.x0 + columns, ys: piece.ys.subarray(columns, piece.ys.length - columns), peak: piece.peak };
}

/** Points every `step` columns, the last column always. */
function sample(piece: Piece, step: number): Point[] {
  const points: Point[] = [];
  const n = piece.ys.length;
  for (let i = 0; i < n - 1; i += Math.max(1, Math.round(step))) points.push([piece.x0 + i, piece.ys[i]]);
  points.push([piece.x0 + n - 1, piece.ys[n - 1]]);
  return points;
}

function dropRepeats(points: Point[]): Point[] {
  const result = points.filter((point, i) => i === 0 || point[0] !== points[i - 1][0] || point[1] !== points[i - 1][1]);
  while (result.length > 1 && result[0][0] === result[result.length - 1][0] && result[0][1] === result[result.length - 1][1]) result.pop();
  return result;
}
