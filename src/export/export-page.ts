// The export view of a PageResult: what PageXML, ALTO, text and PDF share, computed once.
// - ids that are valid, unique xsd:ID values (the model's own id when it already is one);
// - integer pixel geometry clamped to the image, polygons of at least three points;
// - per line, the words to export: the model's words when they spell the line's text,
//   otherwise words cut from the line text and spread over the line box (`wordsEstimated`).
import type { Box, PageResult, Point, TextLine, TextRegion, Word } from '../recognition/page/page-result.ts';

export interface ExportBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface ExportWord {
  id: string;
  text: string;
  box: ExportBox;
  polygon: Point[];
  confidence: number | null;
  /** Other readings of the word, each with its probability (page-result.ts `Word.alternatives`); absent: none. */
  alternatives?: { text: string; confidence: number }[];
}

export interface ExportLine {
  id: string;
  text: string;
  confidence: number | null;
  polygon: Point[];
  box: ExportBox;
  /** null when the model gave fewer than two usable points. */
  baseline: Point[] | null;
  words: ExportWord[];
  /** true when `words` were cut from the text because the model's words did not spell it. */
  wordsEstimated: boolean;
  /**
   * Set when a person corrected the line (docs/corrections.md): `text` is then the correction and
   * this the machine's reading with its confidence, which PageXML keeps as a second TextEquiv.
   */
  machine?: { text: string; confidence: number | null };
}

export interface ExportRegion {
  id: string;
  type: string | null;
  polygon: Point[];
  box: ExportBox;
  lines: ExportLine[];
}

export interface ExportPage {
  result: PageResult;
  width: number;
  height: number;
  regions: ExportRegion[];
}

export function prepareExportPage(page: PageResult): ExportPage {
  const width = page.image.width;
  const height = page.image.height;
  const ids = new IdAllocator();
  const clampPoint = ([x, y]: Point): Point => [clamp(Math.round(x), 0, width - 1), clamp(Math.round(y), 0, height - 1)];
  const pageBox: ExportBox = { x: 0, y: 0, width, height };

  const regions = page.regions.map((region: TextRegion, regionIndex: number): ExportRegion => {
    const regionId = ids.take(region.id, `r${regionIndex + 1}`);
    const lines = region.lines.map((line: TextLine, lineIndex: number): ExportLine => {
      const lineId = ids.take(line.id, `${regionId}_l${lineIndex + 1}`);
      const wordBoxes = line.words.map((word) => clampBox(word.box, width, height));
      const baselinePoints = dedupe(line.baseline.map(clampPoint));
      const lineBox =
        boxOfPoints(line.polygon.map(clampPoint)) ??
        unionOfBoxes(wordBoxes) ??
        (baselinePoints.length > 0 ? boxOfPoints(baselinePoints) : null) ??
        boxOfPoints(region.polygon.map(clampPoint)) ??
        pageBox;
      const polygon = polygonOrBox(line.polygon.map(clampPoint), lineBox);
      const text = line.text;
      const confidence = confidenceOrNull(line.confidence);
      const modelWords = wordsSpellText(line.words, text)
        ? line.words.map((word, wordIndex) => ({
            id: ids.take(word.id, `${lineId}_w${wordIndex + 1}`),
            text: word.text,
            box: wordBoxes[wordIndex],
            polygon: polygonOrBox((word.polygon ?? []).map(clampPoint), wordBoxes[wordIndex]),
            confidence: confidenceOrNull(word.confidence),
            ...alternativesOf(word),
          }))
        : null;
      const words = modelWords ?? estimateWords(text, lineBox, confidence, (index) => ids.take('', `${lineId}_w${index + 1}`));
      return {
        id: lineId,
        text,
        confidence,
        polygon,
        box: lineBox,
        baseline: baselinePoints.length >= 2 ? baselinePoints : null,
        words,
        wordsEstimated: modelWords === null && words.length > 0,
      };
    });
    const regionBox = boxOfPoints(region.polygon.map(clampPoint)) ?? unionOfBoxes(lines.map((line) => line.box)) ?? pageBox;
    return {
      id: regionId,
      type: region.type ?? null,
      polygon: polygonOrBox(region.polygon.map(clampPoint), regionBox),
      box: regionBox,
      lines,
    };
  });
  return { result: page, width, height, regions };
}

/**
 * The page with people's corrections (line id → text, ids as prepareExportPage gives them) in
 * place of the machine's reading: a corrected line's words are cut from its text again (unless
 * the text keeps the model's words), with no confidence, since a person wrote them. A line
 * "corrected" to the text it had stays as it was. The page's lines not named are untouched.
 */
export function applyCorrections(page: ExportPage, corrected: Readonly<Record<string, string>> | undefined): ExportPage {
  if (!corrected || Object.keys(corrected).length === 0) return page;
  // Re-cut words get ids `<line>_c<n>`, unique in the page as xsd:ID requires.
  const ids = new IdAllocator();
  for (const region of page.regions) {
    ids.take(region.id, region.id);
    for (const line of region.lines) {
      ids.take(line.id, line.id);
      for (const word of line.words) ids.take(word.id, word.id);
    }
  }
  const regions = page.regions.map((region) => ({
    ...region,
    lines: region.lines.map((line): ExportLine => {
      const text = corrected[line.id];
      if (text === undefined || text === line.text) return line;
      const keepsWords = !line.wordsEstimated && sameTokens(line.words, text);
      const words = keepsWords
        ? line.words.map(({ alternatives: _, ...word }) => ({ ...word, confidence: null }))
        : estimateWords(text, line.box, null, (index) => ids.take('', `${line.id}_c${index + 1}`));
      return {
        ...line,
        text,
        confidence: null,
        words,
        wordsEstimated: !keepsWords && words.length > 0,
        machine: { text: line.text, confidence: line.confidence },
      };
    }),
  }));
  return { ...page, regions };
}

/** Number of lines of the page that carry a correction. */
export function correctedLineCount(page: ExportPage): number {
  return page.regions.reduce((sum, region) => sum + region.lines.filter((line) => line.machine !== undefined).length, 0);
}

function sameTokens(words: ExportWord[], text: string): boolean {
  const tokens = textTokens(text);
  return words.length === tokens.length && words.every((word, index) => word.text === tokens[index]);
}

/** The whitespace-separated tokens of a line text, the unit that words must match. */
export function textTokens(text: string): string[] {
  return text.split(/\s+/u).filter((token) => token.length > 0);
}

/** A word's alternatives that differ from its text (a correction step may have taken one), with a usable confidence. */
function alternativesOf(word: Word): { alternatives?: { text: string; confidence: number }[] } {
  const alternatives = (word.alternatives ?? []).filter(
    (alternative) => alternative.text.trim() !== '' && alternative.text !== word.text && confidenceOrNull(alternative.confidence) !== null,
  );
  return alternatives.length > 0 ? { alternatives: alternatives.map(({ text, confidence }) => ({ text, confidence })) } : {};
}

function wordsSpellText(words: Word[], text: string): boolean {
  const tokens = textTokens(text);
  if (words.length !== tokens.length) return false;
  return words.every((word, index) => word.text === tokens[index]);
}

/** Cuts the line text into words and spreads them over the line box by character count. */
function estimateWords(text: string, lineBox: ExportBox, confidence: number | null, nextId: (index: number) => string): ExportWord[] {
  const tokens = textTokens(text);
  if (tokens.length === 0) return [];
  const lengths = tokens.map((token) => [...token].length);
  const units = lengths.reduce((sum, length) => sum + length, 0) + (tokens.length - 1);
  const unitWidth = lineBox.width / units;
  let cursor = 0;
  return tokens.map((token, index) => {
    const x0 = lineBox.x + Math.round(cursor * unitWidth);
    cursor += lengths[index];
    const x1 = Math.max(x0 + 1, lineBox.x + Math.round(cursor * unitWidth));
    cursor += 1;
    const box = { x: x0, y: lineBox.y, width: x1 - x0, height: lineBox.height };
    return { id: nextId(index), text: token, box, polygon: boxPolygon(box), confidence };
  });
}

class IdAllocator {
  private readonly used = new Set<string>();

  /** The preferred id when it is a valid unused NCName, else the fallback (made unique). */
  take(preferred: string, fallback: string): string {
    let id = isNcName(preferred) && !this.used.has(preferred) ? preferred : fallback;
    for (let suffix = 2; this.used.has(id); suffix++) id = `${fallback}_${suffix}`;
    this.used.add(id);
    return id;
  }
}

// xsd:NCName, restricted to what every consumer handles (letters, digits, `_`, `-`, `.`).
function isNcName(value: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/.test(value);
}

function confidenceOrNull(value: number): number | null {
  return Number.isFinite(value) ? clamp(value, 0, 1) : null;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function clampBox(box: Box, width: number, height: number): ExportBox {
  const x0 = clamp(Math.round(box.x), 0, width - 1);
  const y0 = clamp(Math.round(box.y), 0, height - 1);
  const x1 = clamp(Math.round(box.x + box.width), x0 + 1, width);
  const y1 = clamp(Math.round(box.y + box.height), y0 + 1, height);
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

function boxOfPoints(points: Point[]): ExportBox | null {
  if (points.length === 0) return null;
  const xs = points.map(([x]) => x);
  const ys = points.map(([, y]) => y);
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return { x, y, width: Math.max(1, Math.max(...xs) - x), height: Math.max(1, Math.max(...ys) - y) };
}

function unionOfBoxes(boxes: ExportBox[]): ExportBox | null {
  if (boxes.length === 0) return null;
  const x = Math.min(...boxes.map((box) => box.x));
  const y = Math.min(...boxes.map((box) => box.y));
  const right = Math.max(...boxes.map((box) => box.x + box.width));
  const bottom = Math.max(...boxes.map((box) => box.y + box.height));
  return { x, y, width: right - x, height: bottom - y };
}

export function boxPolygon(box: ExportBox): Point[] {
  const right = box.x + box.width;
  const bottom = box.y + box.height;
  return [
    [box.x, box.y],
    [right, box.y],
    [right, bottom],
    [box.x, bottom],
  ];
}

function dedupe(points: Point[]): Point[] {
  return points.filter((point, index) => index === 0 || point[0] !== points[index - 1][0] || point[1] !== points[index - 1][1]);
}

function polygonOrBox(points: Point[], box: ExportBox): Point[] {
  const distinct = dedupe(points);
  if (distinct.length > 1 && distinct[0][0] === distinct.at(-1)![0] && distinct[0][1] === distinct.at(-1)![1]) distinct.pop();
  return distinct.length >= 3 ? distinct : boxPolygon(box);
}

export function formatPoints(points: readonly Point[]): string {
  return points.map(([x, y]) => `${x},${y}`).join(' ');
}
