// Greedy CTC decoding of one line: the most likely class at each time step,
// repeats collapsed, blanks dropped; each character keeps its confidence and the
// span of time steps that produced it (for word boxes).
import type { CharacterClasses } from '../models/charset.ts';

export interface DecodedCharacter {
  text: string;
  /** First and one-past-last time step of the character's run. */
  start: number;
  end: number;
  /** Highest probability over the run, 0..1. */
  confidence: number;
}

/**
 * `scores` holds `steps` rows of `classes.symbols.length` values starting at `offset`,
 * rows `stride` values apart. With `logits`, probabilities come from a softmax per row.
 */
export function decodeCtc(
  scores: Float32Array,
  offset: number,
  stride: number,
  steps: number,
  classes: CharacterClasses,
  logits: boolean,
): DecodedCharacter[] {
  const count = classes.symbols.length;
  const allowed = classes.allowed;
  const result: DecodedCharacter[] = [];
  let previous = -1;
  for (let t = 0; t < steps; t += 1) {
    const row = offset + t * stride;
    let best = classes.blank;
    let bestScore = scores[row + best];
    for (let k = 0; k < count; k += 1) {
      const score = scores[row + k];
      if (score > bestScore && (allowed === null || allowed[k] === 1)) {
        bestScore = score;
        best = k;
      }
    }
    let probability = bestScore;
    if (logits) {
      let sum = 0;
      for (let k = 0; k < count; k += 1) sum += Math.exp(scores[row + k] - bestScore);
      probability = Math.min(1, 1 / sum);
    }
    if (best !== classes.blank) {
      const last = result[result.length - 1];
      if (best === previous && last) {
        last.end = t + 1;
        last.confidence = Math.max(last.confidence, probability);
      } else {
        result.push({ text: classes.symbols[best], start: t, end: t + 1, confidence: probability });
      }
    }
    previous = best;
  }
  return result;
}
