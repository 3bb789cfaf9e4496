// The character LM seen by CTC beam search as a small state machine: a state is an LM
// context (the last order-1 code points of a prefix), numbered once; its score for each
// output class and its successor state are computed on first use and kept. Beam search
// then pays an array read per (prefix, class) instead of building a string key and
// looking it up in the n-gram tables (those look-ups were most of its time).
import { lastCodePoints, type CharNgramModel } from './char-ngram-lm.ts';
import type { CharacterClasses } from '../models/charset.ts';

/** Past this many states the cache starts again (about 1.8 KB per state with 150 classes). */
const MAX_STATES = 8192;
/**
 * States per block of the score and successor tables. The blocks are kept when the cache starts
 * again (up to MAX_STATES' worth): a state costs no allocation of its own, where two typed arrays
 * a state were hundreds of thousands of native allocations and young garbage a page.
 */
const BLOCK_STATES = 1024;

export class LanguageModelStates {
  private readonly contexts: string[] = [];
  private readonly ids = new Map<string, number>();
  /** Per state, in blocks of BLOCK_STATES rows of one value per class: alpha * log P(class | context) + beta, NaN until asked. */
  private readonly scoreBlocks: Float64Array[] = [];
  /** The same rows: the state after each class, -1 until asked. */
  private readonly successorBlocks: Int32Array[] = [];
  private readonly finals: number[] = [];
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

  /** The state of the empty prefix. Starting a line is where an overfull cache is emptied. */
  start(): number {
    if (this.contexts.length > MAX_STATES) {
      this.contexts.length = 0;
      this.ids.clear();
      this.finals.length = 0;
      // a line that needed more blocks than usual does not keep them
      this.scoreBlocks.length = Math.min(this.scoreBlocks.length, MAX_STATES / BLOCK_STATES);
      this.successorBlocks.length = this.scoreBlocks.length;
    }
    return this.stateOf('');
  }

  /** alpha * log P(class k | state) + beta: what extending a prefix by class k adds. */
  score(state: number, k: number): number {
    const block = this.scoreBlocks[(state / BLOCK_STATES) | 0];
    const at = (state % BLOCK_STATES) * this.count + k;
    let value = block[at];
    if (Number.isNaN(value)) {
      value = this.alpha * this.lm.logProbability(this.contexts[state], this.classes.symbols[k]) + this.beta;
      block[at] = value;
    }
    return value;
  }

  /** The state after appending class k. */
  next(state: number, k: number): number {
    const block = this.successorBlocks[(state / BLOCK_STATES) | 0];
    const at = (state % BLOCK_STATES) * this.count + k;
    let value = block[at];
    if (value < 0) {
      value = this.stateOf(lastCodePoints(this.contexts[state] + this.classes.symbols[k], this.lm.order - 1));
      block[at] = value;
    }
    return value;
  }

  /** alpha * log P(end of line | state). */
  final(state: number): number {
    let value = this.finals[state];
    if (Number.isNaN(value)) {
      value = this.alpha * this.lm.logProbability(this.contexts[state], this.lm.boundary);
      this.finals[state] = value;
    }
    return value;
  }

  private stateOf(context: string): number {
    let id = this.ids.get(context);
    if (id === undefined) {
      id = this.contexts.length;
      this.ids.set(context, id);
      this.contexts.push(context);
      const blockIndex = (id / BLOCK_STATES) | 0;
      if (blockIndex === this.scoreBlocks.length) {
        this.scoreBlocks.push(new Float64Array(BLOCK_STATES * this.count));
        this.successorBlocks.push(new Int32Array(BLOCK_STATES * this.count));
      }
      const row = (id % BLOCK_STATES) * this.count;
      this.scoreBlocks[blockIndex].fill(Number.NaN, row, row + this.count);
      this.successorBlocks[blockIndex].fill(-1, row, row + this.count);
      this.finals.push(Number.NaN);
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
