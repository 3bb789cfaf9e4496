// Baseline pieces from a baseline probability map, by column-wise run tracking: in each
// column the runs of foreground pixels are found, and the tracks (baselines being followed
// from the left) continue into them: the matching of least total distance from each track's
// predicted position that keeps the tracks' top-to-bottom order, since baselines do not cross.
// A run fatter than the baseline stroke (a descender, or a neighbouring baseline touching this
// one) does not move the tracks that pass through it: each keeps its own predicted course
// inside the run, so lines that touch at a point come out as two tracks, not one, and never
// swap. Thresholding is the caller's low (hysteresis) threshold; each piece records its peak.
// Coordinates here are pixel indices (pixel (x, y) at the point (x, y)).

/** A baseline piece: one y for every column from `x0` on (`ys.length` columns). */
export interface Piece {
  x0: number;
  ys: Float64Array;
  /** The highest baseline probability on the piece. */
  peak: number;
}

interface Run {
  start: number;
  end: number;
  centre: number;
  peak: number;
}

interface Track {
  xs: number[];
  ys: number[];
  /** Last column the track was seen in, observed or passing through a fat run. */
  lastSeen: number;
  peak: number;
}

/** Columns a track may go without any foreground before it ends. */
const MAX_COLUMN_GAP = 2;
/** Columns a track may go through runs too fat to follow (a blot, touching lines) before it ends. */
const MAX_COAST = 40;
/** Observed columns the direction of a track is estimated from. */
const SLOPE_SPAN = 12;

/** The baseline pieces of a map and the typical stroke thickness (px) of its baselines. */
export function baselinePieces(
  map: Float32Array,
  width: number,
  height: number,
  threshold: number,
): { pieces: Piece[]; thickness: number } {
  const columns = columnRuns(map, width, height, threshold);
  const lengths: number[] = [];
  for (const runs of columns) for (const run of runs) lengths.push(run.end - run.start + 1);
  if (lengths.length === 0) return { pieces: [], thickness: 0 };
  lengths.sort((a, b) => a - b);
  const thickness = lengths[lengths.length >> 1];
  // Runs longer than this are not one baseline (a blot, a descender along two touching lines):
  // tracks pass through them on their predicted course and no track starts in them.
  const maxRun = Math.max(5, Math.ceil(2 * thickness + 1));
  const maxJump = Math.max(2, 0.75 * thickness);

  const finished: Track[] = [];
  // Active tracks, kept in their top-to-bottom order (baselines do not cross).
  let active: Track[] = [];
  for (let x = 0; x < width; x += 1) {
    const runs = columns[x];
    if (runs.length === 0 && active.length === 0) continue;
    const matched = matchTracks(active, runs, x, thickness, maxJump);
    const runTaken = new Uint8Array(runs.length);
    for (let i = 0; i < active.length; i += 1) {
      const j = matched.runs[i];
      if (j < 0) continue;
      runTaken[j] = 1;
      const run = runs[j];
      const track = active[i];
      track.lastSeen = x;
      if (run.end - run.start + 1 > maxRun) continue;
      if (run.peak > track.peak) track.peak = run.peak;
      track.xs.push(x);
      track.ys.push(matched.ys[i]);
    }
    const next: Track[] = [];
    for (const track of active) {
      const lastX = track.xs[track.xs.length - 1];
      if (x - track.lastSeen > MAX_COLUMN_GAP || x - lastX > MAX_COAST) finished.push(track);
      else next.push(track);
    }
    for (let j = 0; j < runs.length; j += 1) {
      const run = runs[j];
      if (runTaken[j] || run.end - run.start + 1 > maxRun) continue;
      next.push({ xs: [x], ys: [run.centre], lastSeen: x, peak: run.peak });
    }
    next.sort((a, b) => a.ys[a.ys.length - 1] - b.ys[b.ys.length - 1]);
    active = next;
  }
  finished.push(...active);
  return { pieces: finished.map(toPiece), thickness };
}

/**
 * Which run each track (top to bottom) continues into, and where in it: the matching of least
 * total distance that keeps the tracks' order (baselines do not cross), by dynamic programming
 * over tracks and runs. A stroke-wide run takes one track; a fatter one (a descender, two
 * lines touching) may take several, each at its predicted place within the run's core, kept
 * in order. A track left unmatched costs as much as its farthest allowed match.
 */
function matchTracks(
  tracks: readonly Track[],
  runs: readonly Run[],
  x: number,
  thickness: number,
  maxJump: number,
): { runs: Int32Array; ys: Float64Array } {
  const t = tracks.length;
  const r = runs.length;
  const result = { runs: new Int32Array(t).fill(-1), ys: new Float64Array(t) };
  if (t === 0 || r === 0) return result;
  const half = (thickness - 1) / 2;
  const predicted = tracks.map((track) => predict(track, x));
  const reach = tracks.map((track) => maxJump + 0.5 * (x - track.xs[track.xs.length - 1] - 1));
  const placeIn = (i: number, j: number): number => {
    const run = runs[j];
    let low = run.start + half;
    let high = run.end - half;
    if (low > high) low = high = run.centre;
    return Math.min(Math.max(predicted[i], low), high);
  };
  const fat = runs.map((run) => run.end - run.start + 1 > thickness + 1);
  // cost[i][j]: tracks before i matched within runs before j (run j - 1 possibly shared when fat).
  const columns = r + 1;
  const cost = new Float64Array((t + 1) * columns);
  const step = new Uint8Array((t + 1) * columns);
  const SKIP_RUN = 1;
  const SKIP_TRACK = 2;
  const MATCH = 3;
  const SHARE = 4;
  for (let i = 1; i <= t; i += 1) {
    const miss = reach[i - 1] + 1e-3;
    cost[i * columns] = cost[(i - 1) * columns] + miss;
    step[i * columns] = SKIP_TRACK;
    for (let j = 1; j <= r; j += 1) {
      let best = cost[i * columns + j - 1];
      let how = SKIP_RUN;
      if (cost[(i - 1) * columns + j] + miss < best) {
        best = cost[(i - 1) * columns + j] + miss;
        how = SKIP_TRACK;
      }
      const distance = Math.abs(predicted[i - 1] - placeIn(i - 1, j - 1));
      if (distance <= reach[i - 1]) {
        if (cost[(i - 1) * columns + j - 1] + distance < best) {
          best = cost[(i - 1) * columns + j - 1] + distance;
          how = MATCH;
        }
        if (fat[j - 1] && cost[(i - 1) * columns + j] + distance < best) {
          best = cost[(i - 1) * columns + j] + distance;
          how = SHARE;
        }
      }
      cost[i * columns + j] = best;
      step[i * columns + j] = how;
    }
  }
  let i = t;
  let j = r;
  while (i > 0) {
    const how = j === 0 ? SKIP_TRACK : step[i * columns + j];
    if (how === SKIP_RUN) j -= 1;
    else if (how === SKIP_TRACK) i -= 1;
    else {
      result.runs[i - 1] = j - 1;
      result.ys[i - 1] = placeIn(i - 1, j - 1);
      i -= 1;
      if (how === MATCH) j -= 1;
    }
  }
  // Tracks sharing a run keep their order in it.
  for (let k = 1; k < t; k += 1) {
    if (result.runs[k] >= 0 && result.runs[k] === result.runs[k - 1]) result.ys[k] = Math.max(result.ys[k], result.ys[k - 1]);
  }
  return result;
}

/**
 * The runs of each column, top to bottom, found in one row-major sweep (the map is read in
 * memory order: a column-by-column scan of a row-major map is several times slower).
 */
function columnRuns(map: Float32Array, width: number, height: number, threshold: number): Run[][] {
  const columns: Run[][] = Array.from({ length: width }, () => []);
  const start = new Int32Array(width).fill(-1);
  const weight = new Float64Array(width);
  const moment = new Float64Array(width);
  const peak = new Float64Array(width);
  for (let y = 0; y <= height; y += 1) {
    const row = y * width;
    for (let x = 0; x < width; x += 1) {
      const p = y < height ? map[row + x] : 0;
      if (p >= threshold) {
        if (start[x] < 0) {
          start[x] = y;
          weight[x] = 0;
          moment[x] = 0;
          peak[x] = 0;
        }
        weight[x] += p;
        moment[x] += p * y;
        if (p > peak[x]) peak[x] = p;
      } else if (start[x] >= 0) {
        const centre = weight[x] > 0 ? moment[x] / weight[x] : (start[x] + y - 1) / 2;
        columns[x].push({ start: start[x], end: y - 1, centre, peak: peak[x] });
        start[x] = -1;
      }
    }
  }
  return columns;
}

/** Where a track goes next: straight on along its recent direction. */
function predict(track: Track, x: number): number {
  const n = track.xs.length;
  const lastX = track.xs[n - 1];
  const lastY = track.ys[n - 1];
  const k = Math.max(0, n - 1 - SLOPE_SPAN);
  const span = lastX - track.xs[k];
  // A track of a few columns has no direction yet (one pixel of jitter would read as 45°).
  if (span < 4) return lastY;
  const slope = Math.min(1, Math.max(-1, (lastY - track.ys[k]) / span));
  return lastY + slope * (x - lastX);
}

/** One y per column, straight between the observed columns. */
function toPiece(track: Track): Piece {
  const x0 = track.xs[0];
  const ys = new Float64Array(track.xs[track.xs.length - 1] - x0 + 1);
  for (let i = 0; i < track.xs.length; i += 1) {
    ys[track.xs[i] - x0] = track.ys[i];
    if (i === 0) continue;
    const gap = track.xs[i] - track.xs[i - 1];
    for (let g = 1; g < gap; g += 1) ys[track.xs[i - 1] - x0 + g] = track.ys[i - 1] + ((track.ys[i] - track.ys[i - 1]) * g) / gap;
  }
  return { x0, ys, peak: track.peak };
}
