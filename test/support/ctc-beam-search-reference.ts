// The CTC prefix beam search as it was written first (commit 5be2b63), prefixes as strings and
// beams as objects: the reference src/recognition/decoding/ctc-beam-search.ts must read exactly as
// (test/unit/recognition-ctc-beam-search-reference.test.ts). Kept for that test only.
import type { CharacterClasses } from '../../src/recognition/models/charset.ts';
import { DEFAULT_BEAM_SEARCH, type BeamSearchOptions } from '../../src/recognition/models/beam-search-options.ts';
import type { CharNgramModel } from '../../src/recognition/decoding/char-ngram-lm.ts';
import type { DecodedCharacter } from '../../src/recognition/decoding/ctc-decode.ts';
import { knownWordBonus, type KnownWords } from '../../src/recognition/decoding/known-words.ts';
import { languageModelStates } from '../../src/recognition/decoding/lm-states.ts';

/** One emitted character on a prefix's path; shared by the prefixes that extend it. */
interface Emission {
  text: string;
  start: number;
  end: number;
  confidence: number;
  previous: Emission | null;
}

interface Beam {
  blank: number;
  nonBlank: number;
  last: Emission | null;
  /** Score of the path that set `last` (the strongest one wins the timing). */
  lastScore: number;
  /**
   * The prefix's language model state (lm-states.ts), worked out only for prefixes that
   * survive a frame: until then -1, with the parent's state and the class that extended it.
   */
  state: number;
  parentState: number;
  extendedBy: number;
}

const NEG = -Infinity;

function logAdd(a: number, b: number): number {
  if (a === NEG) return b;
  if (b === NEG) return a;
  return a > b ? a + Math.log1p(Math.exp(b - a)) : b + Math.log1p(Math.exp(a - b));
}

/** A reading of the line that lost to the best one, with its share of the final beams' probability. */
interface RunnerUpReading {
  characters: DecodedCharacter[];
  share: number;
}

/** The best reading, its share of the final beams' probability (0..1) and up to `runnersUp` others, likeliest first. */
interface BeamReadings {
  characters: DecodedCharacter[];
  share: number;
  runnersUp: RunnerUpReading[];
}

/**
 * As beamSearchCtc, and also the readings the search ended with besides the best (at most
 * `runnersUp`), each with its share of the probability of all the final prefixes: the competing
 * readings words' alternatives are drawn from (reading/word-alternatives.ts).
 */
export function referenceBeamSearch(
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
  // the bonus for the word a prefix ends when it is extended by a space (or at the end of the line)
  const wordEnd = (prefix: string): number =>
    words && prefix !== '' && !prefix.endsWith(' ') ? knownWordBonus(prefix, words, options.wordBonus) : 0;
  const logPrune = Math.log(options.prune);
  const frame = new Float64Array(count);
  const states = lm ? languageModelStates(lm, classes, options.alpha, options.beta) : null;
  const extension = (state: number, k: number): number => (states ? states.score(state, k) : options.beta);
  const stateOf = (beam: Beam): number => {
    if (states && beam.state < 0) beam.state = states.next(beam.parentState, beam.extendedBy);
    return beam.state;
  };

  let beams = new Map<string, Beam>([
    ['', { blank: 0, nonBlank: NEG, last: null, lastScore: 0, state: states ? states.start() : -1, parentState: -1, extendedBy: -1 }],
  ]);
  for (let t = 0; t < steps; t += 1) {
    readLogRow(scores, offset + t * stride, count, logits, frame);
    const blankScore = frame[classes.blank];
    const candidates: number[] = [];
    for (let k = 0; k < count; k += 1)
      if (k !== classes.blank && frame[k] >= logPrune && (!classes.allowed || classes.allowed[k])) candidates.push(k);
    if (candidates.length === 0) {
      // A frame where only the blank is likely (most frames of a line): every prefix just
      // ends in blank now, and their order cannot change. Same result as the general step.
      for (const beam of beams.values()) {
        const total = logAdd(beam.blank, beam.nonBlank) + blankScore;
        beam.blank = total;
        beam.nonBlank = NEG;
        beam.lastScore = total;
      }
      continue;
    }
    if (candidates.length > options.maxCandidates) {
      candidates.sort((a, b) => frame[b] - frame[a]);
      candidates.length = options.maxCandidates;
    }

    const next = new Map<string, Beam>();
    const entry = (prefix: string, state: number, parentState: number, extendedBy: number): Beam => {
      let beam = next.get(prefix);
      if (!beam) {
        beam = { blank: NEG, nonBlank: NEG, last: null, lastScore: NEG, state, parentState, extendedBy };
        next.set(prefix, beam);
      }
      return beam;
    };
    // the character timings of a prefix follow its strongest contributing path
    const offer = (target: Beam, score: number, emission: () => Emission | null): void => {
      if (score > target.lastScore) {
        target.last = emission();
        target.lastScore = score;
      }
    };

    for (const [prefix, beam] of beams) {
      const total = logAdd(beam.blank, beam.nonBlank);
      const state = stateOf(beam);
      const same = entry(prefix, state, -1, -1);
      same.blank = logAdd(same.blank, total + blankScore);
      offer(same, total + blankScore, () => beam.last);
      const last = beam.last;
      for (const k of candidates) {
        const char = classes.symbols[k];
        const p = frame[k];
        const target = entry(prefix + char, -1, state, k);
        const via = (char === last?.text ? beam.blank : total) + p + extension(state, k) + (char === ' ' ? wordEnd(prefix) : 0);
        target.nonBlank = logAdd(target.nonBlank, via);
        offer(target, via, () => ({ text: char, start: t, end: t + 1, confidence: Math.exp(p), previous: last }));
        if (last && char === last.text) {
          // a repeated frame without blank prolongs the character's run (emissions are shared: copy)
          const stay = beam.nonBlank + p;
          same.nonBlank = logAdd(same.nonBlank, stay);
          offer(same, stay, () => ({ ...last, end: t + 1, confidence: Math.max(last.confidence, Math.exp(p)) }));
        }
      }
    }
    beams = strongest(next, options.beam);
  }

  const finals: { beam: Beam; score: number }[] = [];
  for (const [prefix, beam] of beams)
    finals.push({ beam, score: logAdd(beam.blank, beam.nonBlank) + (states ? states.final(stateOf(beam)) : 0) + wordEnd(prefix) });
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
          .map((item) => ({ characters: charactersOf(item.beam.last), share: shareOf(item.score) }))
      : [];
  return { characters: charactersOf(best.beam.last), share: shareOf(best.score), runnersUp: others };
}

function charactersOf(last: Emission | null): DecodedCharacter[] {
  const result: DecodedCharacter[] = [];
  for (let e = last; e; e = e.previous) result.push({ text: e.text, start: e.start, end: e.end, confidence: e.confidence });
  return result.reverse();
}

/** The `size` prefixes with the highest total score, best first. */
function strongest(candidates: Map<string, Beam>, size: number): Map<string, Beam> {
  const ranked: { prefix: string; beam: Beam; score: number }[] = [];
  for (const [prefix, beam] of candidates) ranked.push({ prefix, beam, score: logAdd(beam.blank, beam.nonBlank) });
  ranked.sort((a, b) => b.score - a.score);
  const kept = new Map<string, Beam>();
  for (let i = 0; i < Math.min(size, ranked.length); i += 1) kept.set(ranked[i].prefix, ranked[i].beam);
  return kept;
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
