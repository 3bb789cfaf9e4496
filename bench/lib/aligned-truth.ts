// The ground truth under each recognised line: the page's recognised text and its ground truth
// (both at the scoring level, lines joined by newlines) aligned by a minimal Levenshtein
// alignment, each recognised line taking the ground-truth characters aligned with its own. Line
// by line, the errors of a text against its segment add up to the page's errors, so a guard's
// choice can be scored per line (bench/correction-guards.ts tunes its thresholds so) where merged
// and split lines would fool a comparison with the nearest ground-truth line.
import { normaliseText } from './text-metrics.ts';

/** One ground-truth segment per recognised line (empty where the line aligns with nothing). */
export function alignedTruth(recognised: readonly string[], groundTruth: readonly string[]): string[] {
  const lines = recognised.map(normaliseText);
  const hypothesis: string[] = [];
  const lineOf: number[] = [];
  lines.forEach((line, index) => {
    for (const character of Array.from(line)) {
      hypothesis.push(character);
      lineOf.push(index);
    }
    hypothesis.push('\n');
    lineOf.push(-1);
  });
  const reference = Array.from(
    groundTruth
      .map(normaliseText)
      .filter((line) => line !== '')
      .join('\n'),
  );
  const n = hypothesis.length;
  const m = reference.length;
  const width = m + 1;
  // 0: diagonal, 1: up (a hypothesis character deleted), 2: left (a reference character inserted)
  const move = new Uint8Array((n + 1) * width);
  let previous = new Uint32Array(width);
  let current = new Uint32Array(width);
  for (let j = 0; j <= m; j += 1) {
    previous[j] = j;
    move[j] = 2;
  }
  for (let i = 1; i <= n; i += 1) {
    current[0] = i;
    move[i * width] = 1;
    for (let j = 1; j <= m; j += 1) {
      const diagonal = previous[j - 1] + (hypothesis[i - 1] === reference[j - 1] ? 0 : 1);
      const up = previous[j] + 1;
      const left = current[j - 1] + 1;
      let best = diagonal;
      let direction = 0;
      if (up < best) {
        best = up;
        direction = 1;
      }
      if (left < best) {
        best = left;
        direction = 2;
      }
      current[j] = best;
      move[i * width + j] = direction;
    }
    [previous, current] = [current, previous];
  }
  // Walk back; each reference character goes to the line of the hypothesis character it meets
  // (inserted ones to the line of the next hypothesis character, or the previous line at a break).
  const owner = new Int32Array(m).fill(-1);
  let i = n;
  let j = m;
  let pendingLine = -1;
  while (i > 0 || j > 0) {
    const direction = i === 0 ? 2 : j === 0 ? 1 : move[i * width + j];
    if (direction === 0) {
      owner[j - 1] = lineOf[i - 1] >= 0 ? lineOf[i - 1] : pendingLine;
      pendingLine = lineOf[i - 1] >= 0 ? lineOf[i - 1] : pendingLine;
      i -= 1;
      j -= 1;
    } else if (direction === 1) {
      if (lineOf[i - 1] >= 0) pendingLine = lineOf[i - 1];
      i -= 1;
    } else {
      owner[j - 1] = i > 0 && lineOf[i - 1] >= 0 ? lineOf[i - 1] : pendingLine;
      j -= 1;
    }
  }
  const segments = lines.map(() => [] as string[]);
  reference.forEach((character, index) => {
    const line = owner[index];
    if (line >= 0 && character !== '\n') segments[line].push(character);
    else if (line >= 0) segments[line].push(' ');
  });
  return segments.map((segment) => segment.join('').replace(/\s+/g, ' ').trim());
}
