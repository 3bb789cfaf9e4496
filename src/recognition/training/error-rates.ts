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

/** Errors of each reading against its ground truth line. */
export function scoreEachLine(pairs: readonly { read: string; truth: string }[]): LineScores[] {
  return pairs.map(({ read, truth }) => {
    const [hypothesis, reference] = [folded(read), folded(truth)];
    const referenceCharacters = [...reference];
    const referenceWords = words(reference);
    return {
      characters: { errors: editDistance([...hypothesis], referenceCharacters), length: referenceCharacters.length },
      words: { errors: editDistance(words(hypothesis), referenceWords), length: referenceWords.length },
    };
  });
}

/** Line scores summed. */
export function sumScores(lines: readonly LineScores[]): LineScores {
  const total: LineScores = { characters: { errors: 0, length: 0 }, words: { errors: 0, length: 0 } };
  for (const line of lines) {
    total.characters.errors += line.characters.errors;
    total.characters.length += line.characters.length;
    total.words.errors += line.words.errors;
    total.words.length += line.words.length;
  }
  return total;
}

/**
 * How far below the first reading's CER the second's must be to count as a gain rather than
 * chance, on these few lines: `z` standard errors of the summed per-line differences in character
 * errors (the lines as a sample of the hand's lines), as a share of the ground truth's
 * characters. 0 for fewer than two lines.
 */
export function cerMargin(first: readonly LineScores[], second: readonly LineScores[], z: number): number {
  const differences = second.map((line, index) => line.characters.errors - first[index].characters.errors);
  const n = differences.length;
  const characters = first.reduce((sum, line) => sum + line.characters.length, 0);
  if (n < 2 || characters === 0) return 0;
  const mean = differences.reduce((sum, value) => sum + value, 0) / n;
  const variance = differences.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (n - 1);
  return (z * Math.sqrt(n * variance)) / characters;
}

/** errors / length; 0 for no ground truth. */
export const errorRate = (count: ErrorCount): number => (count.length === 0 ? 0 : count.errors / count.length);
