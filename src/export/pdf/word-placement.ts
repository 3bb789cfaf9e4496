// Where each word of a line goes in the invisible text layer, in page pixels (y down).
// - Horizontally the word fills its box, but ends a little before the next word's box so
//   that extractors see a gap (pdf.js glues glyphs closer than 0.03 em; we keep >= 0.06 em).
// - Vertically the word sits on the line's baseline (interpolated under the word's centre,
//   kept inside the box) with its ascent reaching the box top. Using the baseline rather than
//   the box bottom keeps neighbouring handwritten lines, whose boxes overlap, on clearly
//   separate text lines for extractors.
import type { Point } from '../../recognition/page/page-result.ts';
import type { ExportLine } from '../export-page.ts';

export interface WordPlacement {
  text: string;
  left: number;
  right: number;
  /** y of the baseline. */
  baseline: number;
  /** Font size (em height) in pixels. */
  size: number;
  /** x where the space after this word ends (the next word's left), null after the last word. */
  spaceTo: number | null;
}

/** The smallest gap between two words, in em of the word before. */
const MIN_GAP_EM = 0.06;

/** `widthOf(text)`: advance width of `text` in em (font size 1). */
export function placeLineWords(
  line: ExportLine,
  metrics: { ascent: number; descent: number },
  widthOf: (text: string) => number,
): WordPlacement[] {
  const words = line.words;
  return words.map((word, index) => {
    const box = word.box;
    const top = box.y;
    const bottom = box.y + box.height;
    const next = words[index + 1];
    let right = box.x + box.width;
    const width = widthOf(word.text);
    if (next && next.box.x > box.x && width > 0) {
      const available = next.box.x - box.x;
      // Shrink so that the gap is at least MIN_GAP_EM of the word's own horizontal scale.
      right = Math.min(right, box.x + available / (1 + MIN_GAP_EM / width));
    }
    const fromBaseline = line.baseline ? baselineAt(line.baseline, (box.x + right) / 2) : null;
    // Without a baseline, leave the descender part of the box below it.
    const lowest = bottom;
    const highest = top + box.height * 0.3;
    const baseline =
      fromBaseline === null
        ? bottom + (metrics.descent / (metrics.ascent - metrics.descent)) * box.height
        : Math.min(lowest, Math.max(highest, fromBaseline));
    const size = (baseline - top) / metrics.ascent;
    return {
      text: word.text,
      left: box.x,
      right: Math.max(right, box.x + 0.01),
      baseline,
      size,
      spaceTo: next ? Math.max(next.box.x, right) : null,
    };
  });
}

/** y of a left-to-right polyline at x (held constant beyond its ends). */
export function baselineAt(points: readonly Point[], x: number): number {
  const sorted = [...points].sort((a, b) => a[0] - b[0]);
  if (x <= sorted[0][0]) return sorted[0][1];
  for (let index = 1; index < sorted.length; index++) {
    const [x1, y1] = sorted[index];
    if (x <= x1) {
      const [x0, y0] = sorted[index - 1];
      return x1 === x0 ? y1 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
    }
  }
  return sorted.at(-1)![1];
}
