// CTC prefix beam search with an optional character n-gram language model
// (Hannun et al. 2014). Same algorithm and parameters as train/ctc_beam.py, which
// measured and tuned it on the validation set (docs/training.md).
//
// Each prefix keeps two log scores: ending in blank (pb) and ending in its last
// character (pnb). Extending by character c at frame t adds log P(c at t) +
// alpha * log P_lm(c | prefix) + beta; a repeated character extends only from pb (CTC
// needs a blank between equal letters) and otherwise collapses into the same prefix.
// At the end each prefix gets alpha * log P_lm(boundary | prefix); the best total wins.
// With known words (known-words.ts), a prefix whose last word ends (extended by a space, or at
// the end) gains options.wordBonus when that word is known.
//
// It runs for every line of a page, a few hundred prefixes a frame: prefixes are nodes of a trie
// (PrefixTrie), a frame's beams slots of typed arrays (BeamSet), the best kept without sorting
// (keepBest) and an emission made an object only for a prefix a frame keeps. Strings and objects
// for each were 100 MB of garbage a page and 40 % of the search's time; the readings are the same
// to the bit (test/unit/recognition-ctc-beam-search-reference.test.ts).
import type { CharacterClasses } from '../models/charset.ts';
import { DEFAULT_BEAM_SEARCH, type BeamSearchOptions } from '../models/beam-search-options.ts';
import type { CharNgramModel } from './char-ngram-lm.ts';
import type { DecodedCharacter } from './ctc-decode.ts';
import { knownWordBonus, type KnownWords } from './known-words.ts';
import { languageModelStates } from './lm-states.ts';

const NEG = -Infinity;
/** How a prefix's last emission is made when the frame keeps it (BeamSet's `emission`). */
const KEPT = 0;
const NEW = 1;
const PROLONGED = 2;

/** One emitted character on a prefix's path; shared by the prefixes that extend it. */
interface Emission {
  text: string;
  start: number;
  end: number;
  confidence: number;
  previous: Emission | null;
}

/**
 * The prefixes of one frame and their scores, one slot each, kept in typed arrays: each frame
 * fills a set with up to beam x (maxCandidates + 1) prefixes and keeps the best `beam` of them,
 * and objects for each were most of the search's allocation (and of a page's garbage).
 */
class BeamSet {
  size = 0;
  /** The prefix (PrefixTrie node). */
  readonly prefix: Int32Array;
  /** Log scores of the prefix's paths ending in a blank and in its last character. */
  readonly blank: Float64Array;
  readonly nonBlank: Float64Array;
  /** The last character's emission on the strongest path, and that path's score (it wins the timing). */
  readonly last: (Emission | null)[];
  readonly lastScore: Float64Array;
  /**
   * An emission this frame makes, made an object only for a prefix the frame keeps (most are
   * outbid or ranked out): NEW, class `emittedClass` at log probability `emittedLog` after
   * `last`; PROLONGED, `last` prolonged to this frame at that probability; KEPT, `last` itself.
   */
  readonly emission: Uint8Array;
  readonly emittedClass: Int32Array;
  readonly emittedLog: Float64Array;
  /**
   * The prefix's language model state (lm-states.ts), worked out only for prefixes that
   * survive a frame: until then -1, with the parent's state and the class that extended it.
   */
  readonly state: Int32Array;
  readonly parentState: Int32Array;
  readonly extendedBy: Int32Array;
  /** logAdd(blank, nonBlank), set when the frame's prefixes are ranked. */
  readonly total: Float64Array;

  constructor(capacity: number) {
    this.prefix = new Int32Array(capacity);
    this.blank = new Float64Array(capacity);
    this.nonBlank = new Float64Array(capacity);
    this.last = new Array<Emission | null>(capacity).fill(null);
    this.lastScore = new Float64Array(capacity);
    this.emission = new Uint8Array(capacity);
    this.emittedClass = new Int32Array(capacity);
    this.emittedLog = new Float64Array(capacity);
    this.state = new Int32Array(capacity);
    this.parentState = new Int32Array(capacity);
    this.extendedBy = new Int32Array(capacity);
    this.total = new Float64Array(capacity);
  }

  /** A new slot for `prefix`, with nothing scored yet. */
  add(prefix: number, state: number, parentState: number, extendedBy: number): number {
    const slot = this.size++;
    this.prefix[slot] = prefix;
    this.blank[slot] = NEG;
    this.nonBlank[slot] = NEG;
    this.last[slot] = null;
    this.lastScore[slot] = NEG;
    this.emission[slot] = KEPT;
    this.state[slot] = state;
    this.parentState[slot] = parentState;
    this.extendedBy[slot] = extendedBy;
    return slot;
  }

  /** The path that set the slot's timing: its score and how its last emission is made (see `emission`). */
  offer(slot: number, score: number, emission: number, last: Emission | null, emittedClass: number, emittedLog: number): void {
    this.lastScore[slot] = score;
    this.emission[slot] = emission;
    this.last[slot] = last;
    this.emittedClass[slot] = emittedClass;
    this.emittedLog[slot] = emittedLog;
  }

  /** Copies slot `from` of `source`, made at frame `t`, into the next slot of this set, its emission made an object. */
  copy(source: BeamSet, from: number, t: number, symbols: readonly string[]): void {
    const slot = this.size++;
    this.prefix[slot] = source.prefix[from];
    this.blank[slot] = source.blank[from];
    this.nonBlank[slot] = source.nonBlank[from];
    const last = source.last[from];
    const kind = source.emission[from];
    const p = source.emittedLog[from];
    this.last[slot] =
      kind === NEW
        ? { text: symbols[source.emittedClass[from]], start: t, end: t + 1, confidence: Math.exp(p), previous: last }
        : kind === PROLONGED && last
          ? { ...last, end: t + 1, confidence: Math.max(last.confidence, Math.exp(p)) }
          : last;
    this.emission[slot] = KEPT;
    this.lastScore[slot] = source.lastScore[from];
    this.state[slot] = source.state[from];
    this.parentState[slot] = source.parentState[from];
    this.extendedBy[slot] = source.extendedBy[from];
  }

  /** Empties the set (the emissions it held are let go). */
  clear(): void {
    this.last.fill(null, 0, this.size);
    this.size = 0;
  }
}

/**
 * The prefixes of one search as a trie of their characters: a prefix is a node number (0 the empty
 * prefix), and extending one by a character always gives the same node. Prefixes were strings:
 * every extension built and hashed a new one as long as the line so far, which was most of what the
 * search allocated (a hundred megabytes a page, and the collections that go with it). Characters,
 * not classes, make the nodes, so two classes of the same symbol extend to one prefix as the
 * strings did. One trie serves every search of the thread (`start` empties it; the search is
 * synchronous, so never two at once): its arrays grow to the longest line's and are kept.
 */
class PrefixTrie {
  private parents = new Int32Array(1 << 12);
  private characters = new Int32Array(1 << 12);
  /** Per node, the known-word bonus of its last word, worked out once (NaN: not yet). */
  private wordBonus = new Float64Array(1 << 12);
  private count = 0;
  /**
   * The children, open-addressed: key node × classes + character, the child's node, and the search
   * that wrote the slot (a slot of an earlier search is empty).
   */
  private keys = new Float64Array(1 << 13);
  private nodes = new Int32Array(1 << 13);
  private searches = new Int32Array(1 << 13);
  private search = 0;
  /** 32 - log2(the table's size): the hash keeps the product's top bits. */
  private shift = 32 - 13;
  private classes: CharacterClasses | null = null;
  private characterOf = new Int32Array(0);
  private stride = 0;

  /** Empties the trie for a search over `classes`: only the empty prefix, node 0. */
  start(classes: CharacterClasses): void {
    if (classes !== this.classes) {
      this.classes = classes;
      const first = new Map<string, number>();
      this.characterOf = Int32Array.from(classes.symbols, (symbol, k) => {
        if (!first.has(symbol)) first.set(symbol, k);
        return first.get(symbol) as number;
      });
      this.stride = classes.symbols.length;
    }
    this.search += 1;
    if (this.search === 2 ** 31 - 1) {
      this.searches.fill(0);
      this.search = 1;
    }
    this.count = 0;
    this.add(-1, -1);
  }

  child(node: number, k: number): number {
    const character = this.characterOf[k];
    const key = node * this.stride + character;
    let at = this.find(key);
    if (this.searches[at] === this.search) return this.nodes[at];
    const id = this.add(node, character);
    if (this.count * 2 > this.keys.length) {
      this.grow();
      at = this.find(key);
    }
    this.keys[at] = key;
    this.nodes[at] = id;
    this.searches[at] = this.search;
    return id;
  }

  /**
   * The bonus for the word the prefix ends when a space or the line's end follows it: 0 for the
   * empty prefix or one ending in a space, else knownWordBonus of its last word.
   */
  wordEnd(node: number, words: KnownWords | null, bonus: number): number {
    if (words === null) return 0;
    let value = this.wordBonus[node];
    if (Number.isNaN(value)) {
      const { symbols } = this.classes as CharacterClasses;
      let word = '';
      for (let n = node; n > 0 && symbols[this.characters[n]] !== ' '; n = this.parents[n]) word = symbols[this.characters[n]] + word;
      value = word === '' ? 0 : knownWordBonus(word, words, bonus);
      this.wordBonus[node] = value;
    }
    return value;
  }

  private add(parent: number, character: number): number {
    if (this.count === this.parents.length) {
      this.parents = grown(this.parents);
      this.characters = grown(this.characters);
      this.wordBonus = grown(this.wordBonus);
    }
    const id = this.count++;
    this.parents[id] = parent;
    this.characters[id] = character;
    this.wordBonus[id] = Number.NaN;
    return id;
  }

  /** The slot of `key` in this search's table of children, or the empty slot where it would go. */
  private find(key: number): number {
    const mask = this.keys.length - 1;
    let at = (Math.imul(key | 0, 0x9e3779b1) >>> this.shift) & mask;
    while (this.searches[at] === this.search && this.keys[at] !== key) at = (at + 1) & mask;
    return at;
  }

  private grow(): void {
    const { keys, nodes, searches } = this;
    this.keys = new Float64Array(keys.length * 2);
    this.nodes = new Int32Array(keys.length * 2);
    this.searches = new Int32Array(keys.length * 2);
    this.shift -= 1;
    for (let i = 0; i < keys.length; i += 1)
      if (searches[i] === this.search) {
        const at = this.find(keys[i]);
        this.keys[at] = keys[i];
        this.nodes[at] = nodes[i];
        this.searches[at] = this.search;
      }
  }
}

/** A copy of `array` twice as long. */
function grown<T extends Int32Array | Float64Array>(array: T): T {
  const copy = new (array.constructor as new (length: number) => T)(array.length * 2);
  copy.set(array);
  return copy;
}

const trie = new PrefixTrie();

/**
 * Where each prefix (trie node) sits in the frame's BeamSet, valid while `frameOf` holds the frame's
 * number: numbers grow over every search of the thread, so nothing is cleared between frames or lines.
 */
class PrefixSlots {
  slotOf = new Int32Array(1 << 12);
  frameOf = new Float64Array(1 << 12).fill(-1);
  private frames = 0;

  nextFrame(): number {
    this.frames += 1;
    return this.frames;
  }

  grow(length: number): void {
    const size = Math.max(length, this.frameOf.length * 2);
    const slotOf = new Int32Array(size);
    slotOf.set(this.slotOf);
    const frameOf = new Float64Array(size).fill(-1);
    frameOf.set(this.frameOf);
    this.slotOf = slotOf;
    this.frameOf = frameOf;
  }
}

const slots = new PrefixSlots();

function logAdd(a: number, b: number): number {
  if (a === NEG) return b;
  if (b === NEG) return a;
  return a > b ? a + Math.log1p(Math.exp(b - a)) : b + Math.log1p(Math.exp(a - b));
}

/**
 * Decodes `steps` frames of `scores` (rows `stride` values apart from `offset`, one value
 * per class of `classes.symbols`); `logits` true means raw scores or log-probabilities
 * (a log-softmax is applied per row), false means probabilities.
 */
export function beamSearchCtc(
  scores: Float32Array,
  offset: number,
  stride: number,
  steps: number,
  classes: CharacterClasses,
  logits: boolean,
  lm: CharNgramModel | null,
  options: BeamSearchOptions = DEFAULT_BEAM_SEARCH,
  knownWords: KnownWords | null = null,
): DecodedCharacter[] {
  return beamSearchCtcReadings(scores, offset, stride, steps, classes, logits, lm, options, knownWords, 0).characters;
}

/** A reading of the line that lost to the best one, with its share of the final beams' probability. */
export interface RunnerUpReading {
  characters: DecodedCharacter[];
  share: number;
}

/** The best reading, its share of the final beams' probability (0..1) and up to `runnersUp` others, likeliest first. */
export interface BeamReadings {
  characters: DecodedCharacter[];
  share: number;
  runnersUp: RunnerUpReading[];
}

/**
 * As beamSearchCtc, and also the readings the search ended with besides the best (at most
 * `runnersUp`), each with its share of the probability of all the final prefixes: the competing
 * readings words' alternatives are drawn from (reading/word-alternatives.ts).
 */
export function beamSearchCtcReadings(
  scores: Float32Array,
  offset: number,
  stride: number,
  steps: number,
  classes: CharacterClasses,
  logits: boolean,
  lm: CharNgramModel | null,
  options: BeamSearchOptions = DEFAULT_BEAM_SEARCH,
  knownWords: KnownWords | null = null,
  runnersUp = 0,
): BeamReadings {
  const count = classes.symbols.length;
  const words = knownWords && options.wordBonus !== 0 ? knownWords : null;
  trie.start(classes);
  const logPrune = Math.log(options.prune);
  const frame = new Float64Array(count);
  const states = lm ? languageModelStates(lm, classes, options.alpha, options.beta) : null;
  const extension = (state: number, k: number): number => (states ? states.score(state, k) : options.beta);
  const capacity = options.beam * (options.maxCandidates + 1) + 1;
  const beams = new BeamSet(capacity);
  const next = new BeamSet(capacity);
  const stateOf = (slot: number): number => {
    if (states && beams.state[slot] < 0) beams.state[slot] = states.next(beams.parentState[slot], beams.extendedBy[slot]);
    return beams.state[slot];
  };
  // the slot of `prefix` in `next` during the frame numbered `frameNumber`, added the first time it is reached
  const entry = (prefix: number, state: number, parentState: number, extendedBy: number, frameNumber: number): number => {
    if (prefix >= slots.frameOf.length) slots.grow(prefix + 1);
    if (slots.frameOf[prefix] === frameNumber) return slots.slotOf[prefix];
    slots.frameOf[prefix] = frameNumber;
    slots.slotOf[prefix] = next.add(prefix, state, parentState, extendedBy);
    return slots.slotOf[prefix];
  };
  // the classes likely enough in this frame (in class order), the likeliest maxCandidates of them
  // when there are more (best first), and the slots of `next` the frame keeps (best first)
  const likely = new Int32Array(count);
  const likeliest = new Int32Array(options.maxCandidates);
  const kept = new Int32Array(options.beam);

  beams.add(0, states ? states.start() : -1, -1, -1);
  beams.blank[0] = 0;
  beams.lastScore[0] = 0;
  for (let t = 0; t < steps; t += 1) {
    readLogRow(scores, offset + t * stride, count, logits, frame);
    const blankScore = frame[classes.blank];
    let candidateCount = 0;
    for (let k = 0; k < count; k += 1)
      if (k !== classes.blank && frame[k] >= logPrune && (!classes.allowed || classes.allowed[k])) likely[candidateCount++] = k;
    let candidates = likely;
    if (candidateCount > options.maxCandidates) {
      let chosen = 0;
      for (let c = 0; c < candidateCount; c += 1) chosen = keepBest(likeliest, chosen, likely[c], frame);
      candidates = likeliest;
      candidateCount = chosen;
    }
    if (candidateCount === 0) {
      // A frame where only the blank is likely (most frames of a line): every prefix just
      // ends in blank now, and their order cannot change. Same result as the general step.
      for (let beam = 0; beam < beams.size; beam += 1) {
        const total = logAdd(beams.blank[beam], beams.nonBlank[beam]) + blankScore;
        beams.blank[beam] = total;
        beams.nonBlank[beam] = NEG;
        beams.lastScore[beam] = total;
      }
      continue;
    }

    const frameNumber = slots.nextFrame();
    // this frame's prefixes take slots of `next` in the order they are first reached (the ranking's ties keep it);
    // the character timings of a prefix follow its strongest contributing path
    for (let beam = 0; beam < beams.size; beam += 1) {
      const prefix = beams.prefix[beam];
      const blank = beams.blank[beam];
      const nonBlank = beams.nonBlank[beam];
      const total = logAdd(blank, nonBlank);
      const state = stateOf(beam);
      const last = beams.last[beam];
      const same = entry(prefix, state, -1, -1, frameNumber);
      next.blank[same] = logAdd(next.blank[same], total + blankScore);
      if (total + blankScore > next.lastScore[same]) next.offer(same, total + blankScore, KEPT, last, -1, 0);
      for (let c = 0; c < candidateCount; c += 1) {
        const k = candidates[c];
        const char = classes.symbols[k];
        const p = frame[k];
        const target = entry(trie.child(prefix, k), -1, state, k, frameNumber);
        const via =
          (char === last?.text ? blank : total) +
          p +
          extension(state, k) +
          (char === ' ' ? trie.wordEnd(prefix, words, options.wordBonus) : 0);
        next.nonBlank[target] = logAdd(next.nonBlank[target], via);
        if (via > next.lastScore[target]) next.offer(target, via, NEW, last, k, p);
        if (last && char === last.text) {
          // a repeated frame without blank prolongs the character's run
          const stay = nonBlank + p;
          next.nonBlank[same] = logAdd(next.nonBlank[same], stay);
          // (emissions are shared: prolonged in a copy)
          if (stay > next.lastScore[same]) next.offer(same, stay, PROLONGED, last, k, p);
        }
      }
    }
    // the `beam` prefixes with the highest total score, best first
    let keptCount = 0;
    for (let slot = 0; slot < next.size; slot += 1) {
      next.total[slot] = logAdd(next.blank[slot], next.nonBlank[slot]);
      keptCount = keepBest(kept, keptCount, slot, next.total);
    }
    beams.clear();
    for (let i = 0; i < keptCount; i += 1) beams.copy(next, kept[i], t, classes.symbols);
    next.clear();
  }

  const finals: { beam: number; score: number }[] = [];
  for (let beam = 0; beam < beams.size; beam += 1)
    finals.push({
      beam,
      score:
        logAdd(beams.blank[beam], beams.nonBlank[beam]) +
        (states ? states.final(stateOf(beam)) : 0) +
        trie.wordEnd(beams.prefix[beam], words, options.wordBonus),
    });
  let bestIndex = 0;
  for (let i = 1; i < finals.length; i += 1) if (finals[i].score > finals[bestIndex].score) bestIndex = i;
  const best = finals[bestIndex];
  if (!best) return { characters: [], share: 1, runnersUp: [] };
  let total = NEG;
  for (const item of finals) total = logAdd(total, item.score);
  const shareOf = (score: number): number => (Number.isFinite(total) && Number.isFinite(score) ? Math.exp(score - total) : 0);
  const others =
    runnersUp > 0
      ? finals
          .filter((item) => item !== best)
          .sort((a, b) => b.score - a.score)
          .slice(0, runnersUp)
          .map((item) => ({ characters: charactersOf(beams.last[item.beam]), share: shareOf(item.score) }))
      : [];
  return { characters: charactersOf(beams.last[best.beam]), share: shareOf(best.score), runnersUp: others };
}

/**
 * Offers `item` (of value `values[item]`) to `best`, which holds up to best.length items in
 * descending order of their values, `count` of them now; returns the new count. An item ties
 * with the ones offered before it and goes after them: the first best.length items of a stable
 * sort, best first, without sorting all (nor allocating) every frame.
 */
function keepBest(best: Int32Array, count: number, item: number, values: Float64Array): number {
  const value = values[item];
  const full = count === best.length;
  if (full && !(value > values[best[count - 1]])) return count;
  let i = full ? count - 1 : count;
  while (i > 0 && value > values[best[i - 1]]) {
    best[i] = best[i - 1];
    i -= 1;
  }
  best[i] = item;
  return full ? count : count + 1;
}

function charactersOf(last: Emission | null): DecodedCharacter[] {
  const result: DecodedCharacter[] = [];
  for (let e = last; e; e = e.previous) result.push({ text: e.text, start: e.start, end: e.end, confidence: e.confidence });
  return result.reverse();
}

function readLogRow(scores: Float32Array, row: number, count: number, logits: boolean, out: Float64Array): void {
  if (!logits) {
    for (let k = 0; k < count; k += 1) out[k] = Math.log(Math.max(scores[row + k], 1e-30));
    return;
  }
  let max = NEG;
  for (let k = 0; k < count; k += 1) max = Math.max(max, scores[row + k]);
  let sum = 0;
  for (let k = 0; k < count; k += 1) sum += Math.exp(scores[row + k] - max);
  const shift = max + Math.log(sum);
  for (let k = 0; k < count; k += 1) out[k] = scores[row + k] - shift;
}
