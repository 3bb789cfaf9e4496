// Characters placed along a line piece become words: split at spaces, each word's
// span reaching halfway into the gaps around it (CTC peaks sit inside characters,
// not at their edges), mapped back to page pixels through the crop's frame.
import type { Point, WordAlternative } from '../page/page-result.ts';
import { patchToPage, type PatchFrame } from '../image/raster.ts';
import type { CompetingReadings, PlacedCharacter } from './text-recognizer.ts';
import { wordAlternatives } from './word-alternatives.ts';

export interface PlacedWord {
  text: string;
  /** Four corners in page pixels: top-left, top-right, bottom-right, bottom-left (in writing terms). */
  polygon: Point[];
  confidence: number;
  /** Other readings of the word (beam search only): word-alternatives.ts. */
  alternatives?: WordAlternative[];
}

export function wordsOf(
  characters: readonly PlacedCharacter[],
  frame: PatchFrame,
  cropWidth: number,
  cropHeight: number,
  competing?: CompetingReadings,
): PlacedWord[] {
  const runs: PlacedCharacter[][] = [];
  let current: PlacedCharacter[] = [];
  for (const character of characters) {
    if (character.text.trim() === '') {
      if (current.length > 0) runs.push(current);
      current = [];
    } else {
      current.push(character);
    }
  }
  if (current.length > 0) runs.push(current);

  return runs.map((run, index) => {
    const previous = runs[index - 1];
    const next = runs[index + 1];
    const first = run[0];
    const last = run[run.length - 1];
    const start = previous ? (previous[previous.length - 1].end + first.start) / 2 : 0;
    const end = next ? (last.end + next[0].start) / 2 : cropWidth;
    const polygon: Point[] = [
      patchToPage(frame, start, 0),
      patchToPage(frame, end, 0),
      patchToPage(frame, end, cropHeight),
      patchToPage(frame, start, cropHeight),
    ];
    const text = run.map((character) => character.text).join('');
    const confidence = run.reduce((sum, character) => sum + character.confidence, 0) / run.length;
    const alternatives = competing ? wordAlternatives({ start, end }, text, confidence, competing) : [];
    return { text, polygon, confidence, ...(alternatives.length > 0 ? { alternatives } : {}) };
  });
}
