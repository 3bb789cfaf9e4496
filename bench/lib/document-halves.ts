// The two halves of the val documents that bench/correction-guards.ts tunes on and reports on,
// stratified by how hard the recognizer finds each document (ADR 0046): documents ranked by their
// uncorrected CER, taken two at a time in that order, one of each pair to each half. Within a pair
// the document with more pages goes to the half that has fewer pages so far (ties: the easier
// document, then the tune half), so that the halves are alike in difficulty and in size.
// Uncorrected CER is the recognizer's, fixed before any guard runs: the split does not depend on
// what a guard does.

export interface DocumentDifficulty {
  document: string;
  pages: number;
  /** Character errors and reference characters of its pages, uncorrected. */
  errors: number;
  length: number;
}

export interface DocumentHalves {
  tune: Set<string>;
  heldOut: Set<string>;
}

export function stratifiedHalves(documents: readonly DocumentDifficulty[]): DocumentHalves {
  const ranked = [...documents].sort(
    (a, b) => a.errors / Math.max(a.length, 1) - b.errors / Math.max(b.length, 1) || a.document.localeCompare(b.document),
  );
  const halves = { tune: { names: new Set<string>(), pages: 0 }, heldOut: { names: new Set<string>(), pages: 0 } };
  const smaller = () => (halves.heldOut.pages < halves.tune.pages ? halves.heldOut : halves.tune);
  const larger = () => (smaller() === halves.tune ? halves.heldOut : halves.tune);
  for (let at = 0; at < ranked.length; at += 2) {
    const pair = ranked.slice(at, at + 2).sort((a, b) => b.pages - a.pages);
    const [first, second] = pair as [DocumentDifficulty, DocumentDifficulty | undefined];
    const [toFirst, toSecond] = [smaller(), larger()];
    toFirst.names.add(first.document);
    toFirst.pages += first.pages;
    if (second) {
      toSecond.names.add(second.document);
      toSecond.pages += second.pages;
    }
  }
  return { tune: halves.tune.names, heldOut: halves.heldOut.names };
}
