// Layout and readings become the page model's regions, lines and words: ids, polygons
// clamped to the page, baselines, texts, confidences and word boxes kept inside
// their line's box.
import type { Box, Point, TextLine, TextRegion, Word } from '../page/page-result.ts';
import { eventLoopSlices, mapInSlices } from '../threads/event-loop-slices.ts';
import type { RgbImage } from '../image/raster.ts';
import { pieceBaseline } from '../layout/baseline.ts';
import { boundingBox, clampPolygon, convexHull, intersectBoxes } from '../page/geometry.ts';
import type { LayoutLine } from '../layout/group-lines.ts';
import type { LayoutRegion } from '../layout/reading-order.ts';
import type { DetectedBox } from '../layout/text-detector.ts';
import type { PieceReading } from './ocr-engine.ts';
import { wordsOf } from '../reading/words.ts';
import type { UploadedLayout } from '../layout/uploaded-layout.ts';
import type { LineFrames } from '../decoding/ctc-score.ts';

/** Filled with each kept line's output frames by line id (where one piece of the line holds them all). */
export type LineFramesById = Map<string, LineFrames>;

/**
 * With `readings` (recognition ran), lines in which nothing was read are dropped:
 * they are specks, rules or stains the detector took for writing.
 */
export async function assembleRegions(
  image: RgbImage,
  layout: readonly LayoutRegion[],
  readings: Map<DetectedBox, PieceReading> | null,
  lineFrames?: LineFramesById,
): Promise<TextRegion[]> {
  const pause = eventLoopSlices(); // a line's baseline samples its pixels: hundreds of ms a page
  const regions: TextRegion[] = [];
  for (const region of layout) {
    const regionId = `r${regions.length + 1}`;
    const lines: TextLine[] = [];
    for (const line of region.lines) {
      const assembled = assembleLine(image, line, `${regionId}_l${lines.length + 1}`, readings);
      await pause();
      if (readings && assembled.text === '') continue;
      keepFrames(line, assembled.id, readings, lineFrames);
      lines.push(assembled);
    }
    if (lines.length === 0) continue;
    const outline = convexHull(lines.flatMap((line) => line.polygon));
    regions.push({ id: regionId, type: region.type, polygon: clampPolygon(outline, image.width, image.height), lines });
  }
  return regions;
}

function assembleLine(image: RgbImage, line: LayoutLine, id: string, readings: Map<DetectedBox, PieceReading> | null): TextLine {
  const polygon = clampPolygon(line.polygon, image.width, image.height);
  const lineBox = boundingBox(polygon);
  // Left to right along the line, even where pieces overlap.
  const along = (point: Point): number => point[0] * Math.cos(line.angle) + point[1] * Math.sin(line.angle);
  const baseline = clampPolygon(
    line.baseline ?? line.fragments.flatMap((fragment) => pieceBaseline(image, fragment)).sort((a, b) => along(a) - along(b)),
    image.width,
    image.height,
  );
  const texts: string[] = [];
  const words: Word[] = [];
  let confidenceSum = 0;
  let characterCount = 0;
  for (const fragment of line.fragments) {
    const reading = readings?.get(fragment);
    if (!reading) continue;
    const text = reading.characters
      .map((character) => character.text)
      .join('')
      .replace(/\s+/g, ' ')
      .trim();
    if (text) texts.push(text);
    for (const character of reading.characters) {
      if (character.text.trim() === '') continue;
      confidenceSum += character.confidence;
      characterCount += 1;
    }
    for (const word of wordsOf(reading.characters, reading.crop.frame, reading.crop.width, reading.crop.height, reading.competing)) {
      const wordPolygon = clampPolygon(word.polygon, image.width, image.height);
      words.push({
        id: `${id}_w${words.length + 1}`,
        text: word.text,
        box: insideBox(boundingBox(wordPolygon), lineBox),
        polygon: wordPolygon,
        confidence: round(word.confidence),
        ...(word.alternatives ? { alternatives: word.alternatives } : {}),
      });
    }
  }
  return {
    id,
    polygon,
    baseline,
    text: texts.join(' '),
    confidence: characterCount === 0 ? 0 : round(confidenceSum / characterCount),
    words,
  };
}

/** A line's frames when one piece read it all (a whole-line read, or a line of one piece). */
function keepFrames(line: LayoutLine, id: string, readings: Map<DetectedBox, PieceReading> | null, into?: LineFramesById): void {
  if (!into || !readings) return;
  const read = line.fragments.map((fragment) => readings.get(fragment)).filter((reading) => reading && reading.characters.length > 0);
  if (read.length === 1 && read[0]?.frames) into.set(id, read[0].frames);
}

function insideBox(box: Box, outer: Box): Box {
  return intersectBoxes(box, outer) ?? { x: outer.x, y: outer.y, width: 0, height: 0 };
}

function round(value: number): number {
  return Math.round(value * 10000) / 10000;
}

/**
 * Regions of an uploaded layout (layoutRegionsOf gave the engine one piece per line, in the
 * same order): ids, region types, outlines, baselines and reading order stay the file's;
 * every line is kept, read or not; baselines the file lacks are found as for detected lines.
 */
export async function assembleUploadedRegions(
  image: RgbImage,
  uploaded: UploadedLayout,
  layout: readonly LayoutRegion[],
  readings: Map<DetectedBox, PieceReading> | null,
  lineFrames?: LineFramesById,
): Promise<TextRegion[]> {
  const pause = eventLoopSlices();
  const regions: TextRegion[] = [];
  for (const [regionIndex, region] of uploaded.regions.entries()) {
    const lines = await mapInSlices(
      region.lines,
      (line, lineIndex) => {
        const assembled = assembleLine(image, layout[regionIndex].lines[lineIndex], line.id, readings);
        keepFrames(layout[regionIndex].lines[lineIndex], line.id, readings, lineFrames);
        return { ...assembled, polygon: line.polygon, baseline: line.baseline.length >= 2 ? line.baseline : assembled.baseline };
      },
      pause,
    );
    const outline =
      region.polygon.length >= 3
        ? region.polygon
        : clampPolygon(convexHull(lines.flatMap((line) => line.polygon)), image.width, image.height);
    if (lines.length > 0 || outline.length >= 3)
      regions.push({ id: region.id, ...(region.type ? { type: region.type } : {}), polygon: outline, lines });
  }
  return regions;
}
