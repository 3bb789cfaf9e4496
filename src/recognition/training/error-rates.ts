// Character and word error rates of read lines against their ground truth, as a model's figures
// report them (`cer_before`, `cer_after`, `wer_before`, `wer_after`, docs/models.md): edit
// operations over Unicode code points (words: white-space separated tokens), summed over the lines
// and divided by the ground truth's length. The texts are compared as given: the ground truth was
// normalised at intake (NFC, white space folded), and the reading is normalised the same way here.

export interface ErrorCount {
  errors: number;
  /** The ground truth's length (characters or words). */
  length: number;
}

export interface LineScores {
  characters: ErrorCount;
  words: ErrorCount;
}

function editDistance<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous = new Uint32Array(b.length + 1);
  let current = new Uint32Array(b.length + 1);
  for (let j = 0; j <= b.length; j += 1) previous[j] = j;
  for (let i = 1; i <= a.length; i += 1) {
    current[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1), previous[j] + 1, current[j - 1] + 1);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length];
}

const folded = (text: string): string => text.normalize('NFC').replace(/\s+/gu, ' ').trim();
const words = (text: string): string[] => (text === '' ? [] : text.split(' '));

/** Errors of each reading against its ground truth line, summed. */
export function scoreLines(pairs: readonly { read: string; truth: string }[]): LineScores {
  const total: LineScores = { characters: { errors: 0, length: 0 }, words: { errors: 0, length: 0 } };
  for (const { read, truth } of pairs) {
    const [hypothesis, reference] = [folded(read), folded(truth)];
    const referenceCharacters = [...reference];
    total.characters.errors += editDistance([...hypothesis], referenceCharacters);
    total.characters.length += referenceCharacters.length;
    const referenceWords = words(reference);
    total.words.errors += editDistance(words(hypothesis), referenceWords);
    total.words.length += referenceWords.length;
  }
  return total;
}

/** errors / length; 0 for no ground truth. */
export const errorRate = (count: ErrorCount): number => (count.length === 0 ? 0 : count.errors / count.length);
