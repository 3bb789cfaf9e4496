// Scoring recognised text against ground truth: the normalisation, CER and WER.
//
// The normalisation is the `norm` level that the shared datasets use (the `text_norm`
// column of ../shared/datasets/htr-lines; this implementation reproduces all 16,720
// text -> text_norm pairs there exactly), applied because transcription conventions
// differ per dataset (../shared/fixtures/pages/README.md: `⟦…⟧` struck text, `^`
// superscripts, Copiste `>…<` crossings-out, Hooker `--` dashes):
//   1. NFC;
//   2. Copiste crossing-out markers: an empty pair `<>`/`><` becomes a space, the
//      brackets of `>text<` are dropped (the text stays);
//   3. `⟦`, `⟧` and `^` are dropped (their text stays);
//   4. typography folded: ’ ‘ ʼ -> ', « » “ ” „ -> ", — – -> -, runs of hyphens -> one;
//   5. whitespace collapsed and trimmed; no space before ! ? : ; , . ) ] nor after ( [.
// One extension, for the historical print control (OCR-D Kant), whose glyphs the
// datasets never contain: long s ſ -> s, r rotunda ꝛ -> r, and a combining small e
// above a vowel (aͤ, oͤ, uͤ) -> the umlaut (ä, ö, ü).
// Case is kept: CER and WER are case-sensitive.

export function normaliseText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/<>|></g, ' ')
    .replace(/>([^<>]*)</g, '$1')
    .replace(/[⟦⟧^]/g, '')
    .replace(/[’‘ʼ]/g, "'")
    .replace(/[«»“”„]/g, '"')
    .replace(/[—–]/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/ſ/g, 's')
    .replace(/ꝛ/g, 'r')
    .replace(/([aouAOU])\u0364/g, '$1\u0308')
    .normalize('NFC')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/ ([!?:;,.)\]])/g, '$1')
    .replace(/([([]) /g, '$1');
}

/** A page's text for scoring: each line normalised, empty lines dropped, joined by single spaces. */
export function scoringText(lines: readonly string[]): string {
  return lines
    .map(normaliseText)
    .filter((line) => line !== '')
    .join(' ');
}

/** Levenshtein distance between two sequences (unit costs). */
export function editDistance<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous = new Uint32Array(b.length + 1);
  let current = new Uint32Array(b.length + 1);
  for (let j = 0; j <= b.length; j += 1) previous[j] = j;
  for (let i = 1; i <= a.length; i += 1) {
    current[0] = i;
    const item = a[i - 1];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = previous[j - 1] + (item === b[j - 1] ? 0 : 1);
      current[j] = Math.min(substitution, previous[j] + 1, current[j - 1] + 1);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length];
}

export interface ErrorCount {
  /** Edit operations turning the hypothesis into the reference. */
  errors: number;
  /** Length of the reference (characters or words). */
  length: number;
}

/** Character errors over Unicode code points of already normalised texts. */
export function characterErrors(hypothesis: string, reference: string): ErrorCount {
  const ref = Array.from(reference);
  return { errors: editDistance(Array.from(hypothesis), ref), length: ref.length };
}

/** Word errors over whitespace-separated tokens of already normalised texts. */
export function wordErrors(hypothesis: string, reference: string): ErrorCount {
  const words = (text: string): string[] => text.split(' ').filter((word) => word !== '');
  const ref = words(reference);
  return { errors: editDistance(words(hypothesis), ref), length: ref.length };
}

/** Errors over reference length, summed first (a micro-average when given several pages). */
export function errorRate(...counts: ErrorCount[]): number {
  const length = counts.reduce((sum, count) => sum + count.length, 0);
  const errors = counts.reduce((sum, count) => sum + count.errors, 0);
  return length === 0 ? (errors === 0 ? 0 : 1) : errors / length;
}

/** CER and WER of a page given as line lists. */
export function scorePage(
  hypothesisLines: readonly string[],
  referenceLines: readonly string[],
): { characters: ErrorCount; words: ErrorCount } {
  const hypothesis = scoringText(hypothesisLines);
  const reference = scoringText(referenceLines);
  return { characters: characterErrors(hypothesis, reference), words: wordErrors(hypothesis, reference) };
}

/** Character and word edits of recognised lines against their references, summed (and time, where measured). */
export class LineErrors {
  charEdits = 0;
  chars = 0;
  wordEdits = 0;
  words = 0;
  ms = 0;
  add(hypothesis: string, reference: string, ms = 0): void {
    this.charEdits += editDistance([...hypothesis], [...reference]);
    this.chars += [...reference].length;
    const words = reference.split(/\s+/).filter(Boolean);
    this.wordEdits += editDistance(hypothesis.split(/\s+/).filter(Boolean), words);
    this.words += words.length;
    this.ms += ms;
  }
}

/** For each hypothesis character, whether a minimal edit alignment matches it to the same reference character. */
export function rightCharacters(reference: readonly string[], hypothesis: readonly string[]): boolean[] {
  const n = reference.length;
  const m = hypothesis.length;
  const cost = Array.from({ length: n + 1 }, (_, i) => Int32Array.from({ length: m + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= n; i += 1)
    for (let j = 1; j <= m; j += 1)
      cost[i][j] = Math.min(cost[i - 1][j] + 1, cost[i][j - 1] + 1, cost[i - 1][j - 1] + (reference[i - 1] === hypothesis[j - 1] ? 0 : 1));
  const right = new Array<boolean>(m).fill(false);
  let [i, j] = [n, m];
  while (i > 0 && j > 0) {
    const same = reference[i - 1] === hypothesis[j - 1];
    if (cost[i][j] === cost[i - 1][j - 1] + (same ? 0 : 1)) {
      right[j - 1] = same;
      i -= 1;
      j -= 1;
    } else if (cost[i][j] === cost[i - 1][j] + 1) i -= 1;
    else j -= 1;
  }
  return right;
}

/**
 * Stated confidence against the share of characters right, in ten equal-width bins of the
 * confidence: each entry is counted with its weight (one character, or a line's characters at
 * the line's confidence). ECE: the weighted gap between them.
 */
export class ConfidenceBins {
  readonly bins = Array.from({ length: 10 }, () => ({ weight: 0, confidence: 0, right: 0 }));

  add(confidence: number, right: number, weight = 1): void {
    const bin = this.bins[Math.min(9, Math.max(0, Math.floor(confidence * 10)))];
    bin.weight += weight;
    bin.confidence += confidence * weight;
    bin.right += right;
  }

  merge(other: ConfidenceBins): void {
    other.bins.forEach((bin, index) => {
      this.bins[index].weight += bin.weight;
      this.bins[index].confidence += bin.confidence;
      this.bins[index].right += bin.right;
    });
  }

  get weight(): number {
    return this.bins.reduce((sum, bin) => sum + bin.weight, 0);
  }

  get meanConfidence(): number {
    return this.bins.reduce((sum, bin) => sum + bin.confidence, 0) / Math.max(1, this.weight);
  }

  get shareRight(): number {
    return this.bins.reduce((sum, bin) => sum + bin.right, 0) / Math.max(1, this.weight);
  }

  get ece(): number {
    return this.bins.reduce((sum, bin) => sum + Math.abs(bin.confidence - bin.right), 0) / Math.max(1, this.weight);
  }
}
