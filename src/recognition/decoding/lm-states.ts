// The character LM seen by CTC beam search as a small state machine: a state is an LM
// context (the last order-1 code points of a prefix), numbered once; its score for each
// output class and its successor state are computed on first use and kept. Beam search
// then pays an array read per (prefix, class) instead of building a string key and
// looking it up in the n-gram tables (those look-ups were most of its time).
import { lastCodePoints, type CharNgramModel } from './char-ngram-lm.ts';
import type { CharacterClasses } from '../models/charset.ts';

/**
 * Past this many states a new generation of the cache starts (about 1.8 KB per state with 150
 * classes; two generations are kept). 2 048, 4 096 and 8 192 decode the validation lines equally
 * fast once a generation starts with what the one before knew; the smallest costs least memory.
 */
const MAX_STATES = 2048;
/** States per block of the score and successor tables: a state costs no allocation of its own. */
const BLOCK_STATES = 1024;

/** The block that holds a state's row. */
const blockOf = (state: number): number => (state / BLOCK_STATES) | 0;
/** Where a state's row of `count` values starts in its block. */
const rowOf = (state: number, count: number): number => (state % BLOCK_STATES) * count;

/** One generation of states: contexts numbered from 0, their rows in blocks of BLOCK_STATES. */
class Generation {
  readonly contexts: string[] = [];
  readonly ids = new Map<string, number>();
  /** Per state, one value per class: alpha * log P(class | context) + beta, NaN until asked. */
  readonly scoreBlocks: Float64Array[];
  /** The same rows: the state after each class, -1 until asked. */
  readonly successorBlocks: Int32Array[];
  readonly finals: number[] = [];

  constructor(scoreBlocks: Float64Array[], successorBlocks: Int32Array[]) {
    this.scoreBlocks = scoreBlocks;
    this.successorBlocks = successorBlocks;
  }
}

export class LanguageModelStates {
  private current = new Generation([], []);
  /**
   * The generation before: a context it knew starts in the current one with the scores it had, so
   * that starting again does not cost the LM look-ups again.
   */
  private previous: Generation | null = null;
  private readonly lm: CharNgramModel;
  private readonly classes: CharacterClasses;
  private readonly count: number;
  private readonly alpha: number;
  private readonly beta: number;

  constructor(lm: CharNgramModel, classes: CharacterClasses, alpha: number, beta: number) {
    this.lm = lm;
    this.classes = classes;
    this.count = classes.symbols.length;
    this.alpha = alpha;
    this.beta = beta;
  }

  /** The state of the empty prefix. Starting a line is where a full generation gives way to a new one. */
  start(): number {
    if (this.current.contexts.length > MAX_STATES) {
      // the new generation takes the blocks of the one dropped (up to MAX_STATES' worth)
      const blocks = MAX_STATES / BLOCK_STATES;
      const recycled = this.previous ?? new Generation([], []);
      this.previous = this.current;
      this.current = new Generation(recycled.scoreBlocks.slice(0, blocks), recycled.successorBlocks.slice(0, blocks));
    }
    return this.stateOf('');
  }

  /** alpha * log P(class k | state) + beta: what extending a prefix by class k adds. */
  score(state: number, k: number): number {
    const block = this.current.scoreBlocks[blockOf(state)];
    const at = rowOf(state, this.count) + k;
    let value = block[at];
    if (Number.isNaN(value)) {
      value = this.alpha * this.lm.logProbability(this.current.contexts[state], this.classes.symbols[k]) + this.beta;
      block[at] = value;
    }
    return value;
  }

  /** The state after appending class k. */
  next(state: number, k: number): number {
    const block = this.current.successorBlocks[blockOf(state)];
    const at = rowOf(state, this.count) + k;
    let value = block[at];
    if (value < 0) {
      value = this.stateOf(lastCodePoints(this.current.contexts[state] + this.classes.symbols[k], this.lm.order - 1));
      block[at] = value;
    }
    return value;
  }

  /** alpha * log P(end of line | state). */
  final(state: number): number {
    let value = this.current.finals[state];
    if (Number.isNaN(value)) {
      value = this.alpha * this.lm.logProbability(this.current.contexts[state], this.lm.boundary);
      this.current.finals[state] = value;
    }
    return value;
  }

  private stateOf(context: string): number {
    const generation = this.current;
    let id = generation.ids.get(context);
    if (id === undefined) {
      id = generation.contexts.length;
      generation.ids.set(context, id);
      generation.contexts.push(context);
      const blockIndex = blockOf(id);
      if (blockIndex === generation.scoreBlocks.length) {
        generation.scoreBlocks.push(new Float64Array(BLOCK_STATES * this.count));
        generation.successorBlocks.push(new Int32Array(BLOCK_STATES * this.count));
      }
      const row = rowOf(id, this.count);
      const scores = generation.scoreBlocks[blockIndex];
      const previous = this.previous;
      const before = previous?.ids.get(context);
      if (previous && before !== undefined) {
        const from = rowOf(before, this.count);
        scores.set(previous.scoreBlocks[blockOf(before)].subarray(from, from + this.count), row);
        generation.finals.push(previous.finals[before]);
      } else {
        scores.fill(Number.NaN, row, row + this.count);
        generation.finals.push(Number.NaN);
      }
      // successors are state numbers of their own generation: never carried over
      generation.successorBlocks[blockIndex].fill(-1, row, row + this.count);
    }
    return id;
  }
}

const cache = new WeakMap<CharNgramModel, WeakMap<CharacterClasses, Map<string, LanguageModelStates>>>();

/** One state machine per LM, class set and weights, shared by every line decoded with them. */
export function languageModelStates(lm: CharNgramModel, classes: CharacterClasses, alpha: number, beta: number): LanguageModelStates {
  let byClasses = cache.get(lm);
  if (!byClasses) {
    byClasses = new WeakMap();
    cache.set(lm, byClasses);
  }
  let byWeights = byClasses.get(classes);
  if (!byWeights) {
    byWeights = new Map();
    byClasses.set(classes, byWeights);
  }
  const key = `${alpha}\u0000${beta}`;
  let states = byWeights.get(key);
  if (!states) {
    states = new LanguageModelStates(lm, classes, alpha, beta);
    byWeights.set(key, states);
  }
  return states;
}
