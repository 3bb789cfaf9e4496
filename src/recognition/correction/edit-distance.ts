// Levenshtein distance over Unicode code points (not UTF-16 units), with the
// alignment that realign-words.ts needs to map corrected characters back onto
// the recognised ones.

export function codePoints(text: string): string[] {
  return Array.from(text.normalize('NFC'));
}

export function editDistance(a: string, b: string): number {
  const left = codePoints(a);
  const right = codePoints(b);
  if (left.length === 0) return right.length;
  if (right.length === 0) return left.length;
  let previous = Array.from({ length: right.length + 1 }, (_, j) => j);
  let current = new Array<number>(right.length + 1);
  for (let i = 1; i <= left.length; i++) {
    current[0] = i;
    for (let j = 1; j <= right.length; j++) {
      const substitution = previous[j - 1] + (left[i - 1] === right[j - 1] ? 0 : 1);
      current[j] = Math.min(substitution, previous[j] + 1, current[j - 1] + 1);
    }
    [previous, current] = [current, previous];
  }
  return previous[right.length];
}

/** Distance divided by the longer text's length: 0 (same) .. 1 (nothing in common). */
export function editRatio(a: string, b: string): number {
  const longest = Math.max(codePoints(a).length, codePoints(b).length);
  return longest === 0 ? 0 : editDistance(a, b) / longest;
}

/**
 * For each code point of `target`, the index of the `source` code point it was
 * matched or substituted with, or -1 when it was inserted. A minimal-cost
 * alignment; ties prefer a match/substitution, then a deletion from source.
 */
export function alignCodePoints(source: string[], target: string[]): number[] {
  const rows = source.length + 1;
  const cols = target.length + 1;
  const cost = new Uint32Array(rows * cols);
  for (let i = 0; i < rows; i++) cost[i * cols] = i;
  for (let j = 0; j < cols; j++) cost[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const diagonal = cost[(i - 1) * cols + j - 1] + (source[i - 1] === target[j - 1] ? 0 : 1);
      cost[i * cols + j] = Math.min(diagonal, cost[(i - 1) * cols + j] + 1, cost[i * cols + j - 1] + 1);
    }
  }
  const mapping = new Array<number>(target.length).fill(-1);
  let i = source.length;
  let j = target.length;
  while (i > 0 && j > 0) {
    const here = cost[i * cols + j];
    const diagonal = cost[(i - 1) * cols + j - 1] + (source[i - 1] === target[j - 1] ? 0 : 1);
    if (here === diagonal) {
      mapping[j - 1] = i - 1;
      i--;
      j--;
    } else if (here === cost[(i - 1) * cols + j] + 1) {
      i--;
    } else {
      j--;
    }
  }
  return mapping;
}
