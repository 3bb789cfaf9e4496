// The rule that shares a page's lines between the screening recognizer (PP-OCRv4: good
// on print, poor on handwriting) and the main one (ours, trained on handwriting);
// docs/recognition.md, "Two recognizers". Confidence is the mean character confidence.
//   1. The screening recognizer reads the page's widest lines (the probe).
//   2. Probe under `keepAbove`: a handwritten page; the main recognizer reads every line.
//      Otherwise it reads the remaining lines too, and the main recognizer reads only
//      the lines it read something in, under `keepAbove`.
//   3. A line both read keeps the main reading unless the screening one is surer by more
//      than `margin` (the page's kind does not matter here: a printed letterhead makes the
//      probe say print on a handwritten letter).
//   4. A main reading under `dropBelow` is noise: the line keeps the screening reading if
//      there is one, else it is dropped.
import type { SelectionSpec } from '../models/model-spec.ts';
import type { PlacedCharacter } from './text-recognizer.ts';

/** Mean character confidence over a line's pieces, spaces excluded; 0 when nothing was read. */
export function lineConfidence(pieces: readonly (readonly PlacedCharacter[])[]): number {
  const { sum, count } = confidenceSum(pieces);
  return count === 0 ? 0 : sum / count;
}

function confidenceSum(pieces: readonly (readonly PlacedCharacter[])[]): { sum: number; count: number } {
  let sum = 0;
  let count = 0;
  for (const characters of pieces) {
    for (const character of characters) {
      if (character.text.trim() === '') continue;
      sum += character.confidence;
      count += 1;
    }
  }
  return { sum, count };
}

/** Indices of the `count` lines with the widest total piece width (they carry the most text). */
export function probeLines(widths: readonly number[], count: number): number[] {
  return widths
    .map((width, index) => ({ width, index }))
    .sort((a, b) => b.width - a.width || a.index - b.index)
    .slice(0, count)
    .map((line) => line.index)
    .sort((a, b) => a - b);
}

type ProbeReading = readonly (readonly (readonly PlacedCharacter[])[])[];

/** A recognizer's character-weighted confidence over the probe lines (spaces excluded); null when it read nothing. */
function probeConfidence(probe: ProbeReading): number | null {
  let sum = 0;
  let count = 0;
  for (const line of probe) {
    const part = confidenceSum(line);
    sum += part.sum;
    count += part.count;
  }
  return count === 0 ? null : sum / count;
}

/** Whether the probe says print: the screening recognizer's confidence over the probe lines reaches `keepAbove`. */
export function pageLooksPrinted(probe: ProbeReading, selection: SelectionSpec): boolean {
  const confidence = probeConfidence(probe);
  return confidence !== null && confidence >= selection.keepAbove;
}

/**
 * For a page that looks printed: whether it is, i.e. the screening recognizer reads the probe
 * lines more surely than the main one by more than `sureMargin`. Neat handwriting can look
 * printed to the screening recognizer (0.86 on three Copiste pages) while the main one reads it
 * more surely still (0.90-0.95); print reads the other way round (docs/recognition.md).
 */
export function screeningReadsProbeBetter(screening: ProbeReading, main: ProbeReading, selection: SelectionSpec): boolean {
  return selection.sureMargin === null || (probeConfidence(screening) ?? 0) > (probeConfidence(main) ?? 0) + selection.sureMargin;
}

/**
 * For a page that looks printed: whether the screening recognizer reads the probe so surely
 * (`printedAbove`) that the main recognizer need not be asked. PP-OCRv4 read the probes of the
 * printed pages here at 0.96-1.00 and those of handwritten ones at 0.89 at most (docs/recognition.md).
 */
export function probeSurelyPrinted(screening: ProbeReading, selection: SelectionSpec): boolean {
  return selection.printedAbove !== null && (probeConfidence(screening) ?? 0) >= selection.printedAbove;
}

/**
 * Whether the screening recognizer read one line as surely as a probe that says print without
 * asking the main recognizer (`printedAbove`): on a printed page laid out again, such a probe line
 * keeps its reading where the detector finds the same line (OcrEngine.read).
 */
export function lineReadSurely(pieces: readonly (readonly PlacedCharacter[])[], selection: SelectionSpec): boolean {
  return selection.printedAbove !== null && lineConfidence(pieces) >= selection.printedAbove;
}

/**
 * Whether a line the screening recognizer read keeps that reading without asking the main one.
 * On a printed page, a line it read nothing in stays empty (a rule, an ornament, a stain: the
 * main recognizer would read letters into it), as with the screening recognizer alone. With
 * `sureMargin`, never on a handwritten page: a sure reading there is checked against the main one.
 */
export function screeningSuffices(screeningConfidence: number, pagePrinted: boolean, selection: SelectionSpec): boolean {
  if (!pagePrinted && selection.sureMargin !== null) return false;
  return screeningConfidence >= selection.keepAbove || (pagePrinted && screeningConfidence === 0);
}

/** Whether a main reading is too unsure to be text (a stain, a rule, an ornament). */
export function mainReadingIsNoise(mainConfidence: number, selection: SelectionSpec): boolean {
  return mainConfidence < selection.dropBelow;
}

/**
 * For a line both read: whether the screening reading wins over the main one. A sure one (at
 * `keepAbove`) wins unless the main reading is about as sure (`sureMargin`): on a handwritten page
 * PP-OCRv4 reads some neat handwriting at 0.85-0.9 where ours reads it better and more surely.
 */
export function screeningWins(screeningConfidence: number, mainConfidence: number, selection: SelectionSpec): boolean {
  const sure =
    screeningConfidence >= selection.keepAbove &&
    (selection.sureMargin === null || screeningConfidence > mainConfidence + selection.sureMargin);
  return sure || screeningConfidence > mainConfidence + selection.margin;
}
