// Word spaces from the ink: a recognizer trained on print (PP-OCR) rarely emits the
// spaces of handwriting, so where two consecutive characters are separated by a
// blank stretch of paper wider than a fraction of the line height, a space goes in.
import { greyRows, paperAndInk } from '../image/raster.ts';
import type { PlacedCharacter } from './text-recognizer.ts';

export interface GapOptions {
  /** Narrowest word gap, as a fraction of the crop height. */
  minGap: number;
}

interface Run {
  start: number;
  end: number;
}

/** A reading with at least one space per this many characters spaces its words itself. */
const SPACED_TEXT = 12;

/**
 * Inserts spaces between characters that a wide enough blank column run separates,
 * unless the recognizer already spaced the words of this piece (print, usually).
 */
export function insertGapSpaces(
  characters: readonly PlacedCharacter[],
  pixels: Float32Array,
  width: number,
  height: number,
  options: GapOptions,
): PlacedCharacter[] {
  if (characters.length < 2) return [...characters];
  const spaces = characters.filter((character) => character.text.trim() === '').length;
  if (spaces > 0 && (characters.length - spaces) / spaces <= SPACED_TEXT) return [...characters];
  const minGap = options.minGap * height;
  const gaps = blankRuns(pixels, width, height).filter((run) => run.end - run.start >= minGap);
  if (gaps.length === 0) return [...characters];
  const result: PlacedCharacter[] = [characters[0]];
  for (let index = 1; index < characters.length; index += 1) {
    const previous = characters[index - 1];
    const current = characters[index];
    if (previous.text.trim() !== '' && current.text.trim() !== '') {
      const from = (previous.start + previous.end) / 2;
      const to = (current.start + current.end) / 2;
      const gap = gaps.find((run) => Math.min(run.end, to) - Math.max(run.start, from) >= minGap);
      if (gap)
        result.push({
          text: ' ',
          start: Math.max(gap.start, from),
          end: Math.min(gap.end, to),
          confidence: Math.min(previous.confidence, current.confidence),
        });
    }
    result.push(current);
  }
  return result;
}

/**
 * Column runs without ink in the middle half of the crop's height (ruled lines and the
 * descenders or ascenders of neighbouring lines stay outside it).
 */
export function blankRuns(pixels: Float32Array, width: number, height: number): Run[] {
  const top = Math.floor(height * 0.25);
  const bottom = Math.ceil(height * 0.75);
  const grey = greyRows(pixels, width, top, bottom);
  const { paper, ink } = paperAndInk(grey, 0.01);
  if (paper - ink < 40) return [];
  const threshold = ink + (paper - ink) * 0.55;
  const runs: Run[] = [];
  let start = -1;
  for (let x = 0; x <= width; x += 1) {
    let blank = x < width;
    for (let y = 0; blank && y < bottom - top; y += 1) if (grey[y * width + x] < threshold) blank = false;
    if (blank && start < 0) start = x;
    if (!blank && start >= 0) {
      runs.push({ start, end: x });
      start = -1;
    }
  }
  return runs;
}
