// How well a text fits a line's image: the CTC log-likelihood of the text given the line's output
// frames (the forward algorithm, Graves et al. 2006), with the blank the decoders use. The
// correction guard (correction/line-evidence.ts) compares the likelihood of a proposed correction
// with that of the recognised text: the image, not our reading, judges the correction.
import type { CharacterClasses } from '../models/charset.ts';

/** One line's output frames as recognition computed them, kept for the page's correction. */
export interface LineFrames {
  /** `steps` rows of `classes.symbols.length` values, one after the other. */
  scores: Float32Array;
  steps: number;
  /** Raw scores or log-probabilities (true: a log-softmax is applied per row) or probabilities (false). */
  logits: boolean;
  classes: CharacterClasses;
}

export interface TextLikelihood {
  /** ln P(text | frames), summed over every CTC path; -Infinity when the frames cannot hold the text. */
  logLikelihood: number;
  /** Labels scored (characters of the text the recognizer can write, spaces left out when it has none). */
  labels: number;
  /** Characters the recognizer has no class for, scored as the likeliest non-blank class of each frame. */
  unknown: number;
}

/** A label that matches any character: the text holds one the recognizer cannot write. */
const WILDCARD = -1;
const NEG = Number.NEGATIVE_INFINITY;

/** The text's labels: longest symbol first at each position, spaces dropped when the recognizer writes none. */
export function textLabels(text: string, classes: CharacterClasses): { labels: number[]; unknown: number } {
  const index = symbolIndex(classes);
  const labels: number[] = [];
  let unknown = 0;
  const characters = Array.from(text.normalize('NFC'));
  for (let at = 0; at < characters.length; ) {
    let matched = 0;
    for (let length = Math.min(index.longest, characters.length - at); length >= 1; length -= 1) {
      const label = index.map.get(characters.slice(at, at + length).join(''));
      if (label !== undefined) {
        labels.push(label);
        matched = length;
        break;
      }
    }
    if (matched === 0) {
      const character = characters[at];
      matched = 1;
      if (character === ' ' || /\s/u.test(character)) {
        if (classes.space >= 0) labels.push(classes.space);
      } else {
        labels.push(WILDCARD);
        unknown += 1;
      }
    }
    at += matched;
  }
  return { labels, unknown };
}

/** ln P(text | frames) by the CTC forward algorithm in log space. */
export function ctcLogLikelihood(frames: LineFrames, text: string): TextLikelihood {
  const { labels, unknown } = textLabels(text, frames.classes);
  return { logLikelihood: forward(logProbabilities(frames), frames, labels), labels: labels.length, unknown };
}

/**
 * The frames' log-probabilities (one log-softmax per row for logits), computed once per frames
 * object: a guard scores two texts or more against each line.
 */
function logProbabilities(frames: LineFrames): LogFrames {
  const cached = logCache.get(frames);
  if (cached) return cached;
  const count = frames.classes.symbols.length;
  const { scores, steps, classes } = frames;
  const log = new Float64Array(steps * count);
  const best = new Float64Array(steps);
  for (let t = 0; t < steps; t += 1) {
    const row = t * count;
    if (frames.logits) {
      let max = NEG;
      for (let k = 0; k < count; k += 1) max = Math.max(max, scores[row + k]);
      let sum = 0;
      for (let k = 0; k < count; k += 1) sum += Math.exp(scores[row + k] - max);
      const shift = max + Math.log(sum);
      for (let k = 0; k < count; k += 1) log[row + k] = scores[row + k] - shift;
    } else {
      for (let k = 0; k < count; k += 1) log[row + k] = Math.log(Math.max(scores[row + k], 1e-30));
    }
    let top = NEG;
    for (let k = 0; k < count; k += 1) if (k !== classes.blank && log[row + k] > top) top = log[row + k];
    best[t] = top;
  }
  const result = { log, best, count };
  logCache.set(frames, result);
  return result;
}

interface LogFrames {
  log: Float64Array;
  /** Per frame, the likeliest non-blank class's log-probability (what a wildcard label scores). */
  best: Float64Array;
  count: number;
}

const logCache = new WeakMap<LineFrames, LogFrames>();

function forward(frames: LogFrames, source: LineFrames, labels: readonly number[]): number {
  const { steps } = source;
  const blank = source.classes.blank;
  const { log, best, count } = frames;
  if (steps === 0) return labels.length === 0 ? 0 : NEG;
  // the extended sequence: blank, l1, blank, l2, ..., blank
  const size = 2 * labels.length + 1;
  const symbol = (s: number): number => (s % 2 === 0 ? blank : labels[(s - 1) / 2]);
  const emit = (t: number, s: number): number => {
    const label = symbol(s);
    return label === WILDCARD ? best[t] : log[t * count + label];
  };
  // a label may follow the one two back (skipping the blank) unless both are the same class
  const canSkip = new Uint8Array(size);
  for (let s = 3; s < size; s += 2) {
    const here = symbol(s);
    canSkip[s] = here === WILDCARD || here !== symbol(s - 2) ? 1 : 0;
  }
  let alpha = new Float64Array(size).fill(NEG);
  let next = new Float64Array(size);
  alpha[0] = emit(0, 0);
  if (size > 1) alpha[1] = emit(0, 1);
  for (let t = 1; t < steps; t += 1) {
    // only states from which the end is still reachable in the frames left matter, but all are cheap
    for (let s = 0; s < size; s += 1) {
      let sum = alpha[s];
      if (s >= 1) sum = logAdd(sum, alpha[s - 1]);
      if (canSkip[s]) sum = logAdd(sum, alpha[s - 2]);
      next[s] = sum === NEG ? NEG : sum + emit(t, s);
    }
    [alpha, next] = [next, alpha];
  }
  return size > 1 ? logAdd(alpha[size - 1], alpha[size - 2]) : alpha[0];
}

function logAdd(a: number, b: number): number {
  if (a === NEG) return b;
  if (b === NEG) return a;
  return a > b ? a + Math.log1p(Math.exp(b - a)) : b + Math.log1p(Math.exp(a - b));
}

interface SymbolIndex {
  map: Map<string, number>;
  longest: number;
}

const symbolIndexes = new WeakMap<CharacterClasses, SymbolIndex>();

function symbolIndex(classes: CharacterClasses): SymbolIndex {
  let index = symbolIndexes.get(classes);
  if (!index) {
    const map = new Map<string, number>();
    let longest = 1;
    classes.symbols.forEach((symbol, label) => {
      if (label === classes.blank || symbol === '' || map.has(symbol.normalize('NFC'))) return;
      const key = symbol.normalize('NFC');
      map.set(key, label);
      longest = Math.max(longest, Array.from(key).length);
    });
    index = { map, longest };
    symbolIndexes.set(classes, index);
  }
  return index;
}

/**
 * The likeliest CTC path of the text through the frames (Viterbi): for each frame, the index of the
 * text's label it emits, or -1 for a blank. Null when the frames cannot hold the text. The
 * correction guard compares where two texts put their characters (line-evidence.ts: recognised
 * characters a correction leaves to blanks).
 */
export function ctcAlignment(frames: LineFrames, text: string): CtcAlignment | null {
  const { labels } = textLabels(text, frames.classes);
  const { log, best, count } = logProbabilities(frames);
  const { steps } = frames;
  const blank = frames.classes.blank;
  const size = 2 * labels.length + 1;
  if (steps === 0) return labels.length === 0 ? { path: new Int32Array(0), labels: 0, ink: new Float64Array(0) } : null;
  const symbol = (s: number): number => (s % 2 === 0 ? blank : labels[(s - 1) / 2]);
  const emit = (t: number, s: number): number => {
    const label = symbol(s);
    return label === WILDCARD ? best[t] : log[t * count + label];
  };
  const canSkip = new Uint8Array(size);
  for (let s = 3; s < size; s += 2) {
    const here = symbol(s);
    canSkip[s] = here === WILDCARD || here !== symbol(s - 2) ? 1 : 0;
  }
  // back[t * size + s]: how many states back the best path into (t, s) came from (0, 1 or 2)
  const back = new Uint8Array(steps * size);
  let score = new Float64Array(size).fill(NEG);
  let next = new Float64Array(size);
  score[0] = emit(0, 0);
  if (size > 1) score[1] = emit(0, 1);
  for (let t = 1; t < steps; t += 1) {
    for (let s = 0; s < size; s += 1) {
      let top = score[s];
      let from = 0;
      if (s >= 1 && score[s - 1] > top) {
        top = score[s - 1];
        from = 1;
      }
      if (canSkip[s] && score[s - 2] > top) {
        top = score[s - 2];
        from = 2;
      }
      next[s] = top === NEG ? NEG : top + emit(t, s);
      back[t * size + s] = from;
    }
    [score, next] = [next, score];
  }
  let state = size > 1 && score[size - 2] > score[size - 1] ? size - 2 : size - 1;
  if (score[state] === NEG) return null;
  const path = new Int32Array(steps);
  const ink = new Float64Array(steps);
  for (let t = steps - 1; t >= 0; t -= 1) {
    path[t] = state % 2 === 0 ? -1 : (state - 1) / 2;
    if (path[t] >= 0) ink[t] = Math.max(0, emit(t, state) - log[t * count + blank]);
    if (t > 0) state -= back[t * size + state];
  }
  return { path, labels: labels.length, ink };
}

export interface CtcAlignment {
  /** Per frame, the index of the text's label the likeliest path emits there, or -1 for a blank. */
  path: Int32Array;
  /** The text's labels. */
  labels: number;
  /**
   * Per frame, how much likelier the path's label is there than a blank (ln, at least 0; 0 at
   * blanks): how clearly the frame shows ink that label was read from.
   */
  ink: Float64Array;
}
