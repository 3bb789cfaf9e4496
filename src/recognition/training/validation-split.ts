// Which ground-truth lines a training holds out: the trainer validates on them (its choice of the
// best epoch) and the service reads them with the base model and with the trained one (the
// figures a model is offered with, docs/models.md). Whole pages where there are 3 pages or more (a
// fifth of them, spread over the document, the last always among them), else a fifth of the lines,
// spread the same way: train/finetune.py's own rule when a lines file marks no split.

/** The share of pages (3 or more), or of lines, held out. */
export const VALIDATION_SHARE = 0.2;

/** `chosen` of `count` positions (0-based) spread evenly, the last one always among them (as finetune.py spreads them). */
export function spreadPositions(count: number, chosen: number): number[] {
  const positions = new Set<number>();
  for (let i = 0; i < chosen; i += 1) positions.add(count - 1 - Math.round((i * count) / chosen));
  return [...positions].filter((position) => position >= 0).sort((a, b) => a - b);
}

export interface SplitPage {
  lines: readonly unknown[];
}

/**
 * For each page (in document order), for each of its lines, whether it is held out. A training of
 * one line holds none out: the caller refuses ground truth that small before.
 */
export function heldOutLines(pages: readonly SplitPage[], share = VALIDATION_SHARE): boolean[][] {
  if (pages.length >= 3) {
    const held = new Set(spreadPositions(pages.length, Math.max(1, Math.round(share * pages.length))));
    return pages.map((page, index) => page.lines.map(() => held.has(index)));
  }
  const total = pages.reduce((sum, page) => sum + page.lines.length, 0);
  const held = new Set(total < 2 ? [] : spreadPositions(total, Math.max(1, Math.round(share * total))));
  let position = 0;
  return pages.map((page) => page.lines.map(() => held.has(position++)));
}

/** How the lines were split, as finetune.py names it. */
export const splitKind = (pages: number): 'page' | 'line' => (pages >= 3 ? 'page' : 'line');
