// Re-aligns a corrected line's words to the recognised word boxes, so that ALTO
// and the PDF text layer keep their geometry after correction.
//
// - Same number of words: word i keeps its id, box, polygon and confidence and
//   takes the i-th corrected word as text.
// - Otherwise each recognised word box is cut into equal slices, one per
//   character, and the corrected text is aligned to the recognised text
//   character by character (Levenshtein). A corrected word spans the slices of
//   the recognised characters its own characters were aligned with (inserted
//   characters add no width); its height is that of the recognised words it
//   touches. So a split ("brownfox" → "brown fox") divides one box, a join
//   ("to gether" → "together") merges two, and a word that aligns with exactly
//   one whole recognised word keeps that word's box and polygon.
// - A corrected word that aligns with no recognised character (a wholly
//   inserted word), or a line without word boxes, falls back to spreading all
//   corrected words over the line's word span in proportion to their length.
import type { Box, TextLine, Word } from '../page/page-result.ts';
import { alignCodePoints, codePoints } from './edit-distance.ts';

interface Slice {
  char: string;
  /** Index of the recognised word, -1 for the space between two words. */
  word: number;
  x0: number;
  x1: number;
}

interface Token {
  text: string;
  /** Code point range inside the corrected text joined by single spaces. */
  start: number;
  end: number;
}

export function splitWords(text: string): string[] {
  return text.split(/\s+/u).filter((part) => part.length > 0);
}

export function realignWords(line: TextLine, correctedText: string): Word[] {
  const texts = splitWords(correctedText);
  if (texts.length === 0) return [];
  const words = line.words;
  if (words.length === texts.length) {
    return words.map((word, index) => ({ ...word, text: texts[index] }));
  }
  if (words.length === 0) return spreadProportionally(line, texts);
  return alignByCharacters(line, texts) ?? spreadProportionally(line, texts);
}

function alignByCharacters(line: TextLine, texts: string[]): Word[] | null {
  const words = line.words;
  const slices = recognisedSlices(words);
  const tokens = corrected(texts);
  const target = codePoints(texts.join(' '));
  const mapping = alignCodePoints(
    slices.map((slice) => slice.char),
    target,
  );
  const ids = new UniqueIds(words.map((word) => word.id));
  const result: Word[] = [];
  for (const token of tokens) {
    const aligned: number[] = [];
    for (let j = token.start; j < token.end; j++) {
      const index = mapping[j];
      if (index >= 0 && slices[index].word >= 0) aligned.push(index);
    }
    if (aligned.length === 0) return null;
    const first = aligned[0];
    const last = aligned[aligned.length - 1];
    const touched = new Set<number>();
    for (let k = first; k <= last; k++) if (slices[k].word >= 0) touched.add(slices[k].word);
    const sources = [...touched].map((index) => words[index]);
    if (sources.length === 1 && coversWholeWord(slices, first, last)) {
      // The token is that recognised word, corrected: keep its exact box and polygon.
      result.push({ ...sources[0], id: ids.claim(sources[0].id), text: token.text });
      continue;
    }
    const y0 = Math.min(...sources.map((word) => word.box.y));
    const y1 = Math.max(...sources.map((word) => word.box.y + word.box.height));
    result.push({
      id: ids.claim(words[slices[first].word].id),
      text: token.text,
      box: roundedBox(slices[first].x0, y0, slices[last].x1, y1),
      confidence: mean(sources.map((word) => word.confidence)),
    });
  }
  return result;
}

function coversWholeWord(slices: Slice[], first: number, last: number): boolean {
  const word = slices[first].word;
  const startsWord = first === 0 || slices[first - 1].word !== word;
  const endsWord = last === slices.length - 1 || slices[last + 1].word !== word;
  return startsWord && endsWord;
}

function recognisedSlices(words: Word[]): Slice[] {
  const slices: Slice[] = [];
  words.forEach((word, index) => {
    if (index > 0) {
      const gap = (words[index - 1].box.x + words[index - 1].box.width + word.box.x) / 2;
      slices.push({ char: ' ', word: -1, x0: gap, x1: gap });
    }
    const chars = codePoints(word.text);
    const width = word.box.width / Math.max(1, chars.length);
    chars.forEach((char, k) => {
      slices.push({ char, word: index, x0: word.box.x + k * width, x1: word.box.x + (k + 1) * width });
    });
  });
  return slices;
}

function corrected(texts: string[]): Token[] {
  const tokens: Token[] = [];
  let position = 0;
  for (const text of texts) {
    const length = codePoints(text).length;
    tokens.push({ text, start: position, end: position + length });
    position += length + 1;
  }
  return tokens;
}

function spreadProportionally(line: TextLine, texts: string[]): Word[] {
  const span = wordSpan(line);
  const units = texts.reduce((sum, text) => sum + codePoints(text).length, 0) + texts.length - 1;
  const ids = new UniqueIds(line.words.map((word) => word.id));
  const confidence = line.words.length > 0 ? mean(line.words.map((word) => word.confidence)) : line.confidence;
  let position = 0;
  return texts.map((text, index) => {
    const length = codePoints(text).length;
    const x0 = span.x + (span.width * position) / units;
    const x1 = span.x + (span.width * (position + length)) / units;
    position += length + 1;
    return {
      id: ids.claim(line.words[index]?.id ?? `${line.id}_w${index + 1}`),
      text,
      box: roundedBox(x0, span.y, x1, span.y + span.height),
      confidence,
    };
  });
}

/** The union of the word boxes, or the bounding box of the line polygon when it has no words. */
function wordSpan(line: TextLine): Box {
  const boxes = line.words.map((word) => word.box);
  if (boxes.length > 0) {
    const x0 = Math.min(...boxes.map((box) => box.x));
    const y0 = Math.min(...boxes.map((box) => box.y));
    const x1 = Math.max(...boxes.map((box) => box.x + box.width));
    const y1 = Math.max(...boxes.map((box) => box.y + box.height));
    return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
  }
  const xs = line.polygon.map((point) => point[0]);
  const ys = line.polygon.map((point) => point[1]);
  const x0 = Math.min(...xs);
  const y0 = Math.min(...ys);
  return { x: x0, y: y0, width: Math.max(...xs) - x0, height: Math.max(...ys) - y0 };
}

function roundedBox(x0: number, y0: number, x1: number, y1: number): Box {
  const left = Math.round(x0);
  const top = Math.round(y0);
  const right = Math.max(left + 1, Math.round(x1));
  const bottom = Math.max(top + 1, Math.round(y1));
  return { x: left, y: top, width: right - left, height: bottom - top };
}

function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Word ids stay unique within a line: a recognised id is reused once, then suffixed `_2`, `_3`, … */
class UniqueIds {
  private readonly taken = new Set<string>();
  private readonly available: Set<string>;

  constructor(recognised: string[]) {
    this.available = new Set(recognised);
  }

  claim(preferred: string): string {
    let id = preferred;
    for (let n = 2; this.taken.has(id) || (id !== preferred && this.available.has(id)); n++) id = `${preferred}_${n}`;
    this.taken.add(id);
    return id;
  }
}
