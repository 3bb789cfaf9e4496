// A page read turned by 180° (recognition/page-turn.ts) has its lines, words and regions found in
// the turned raster; the page result keeps every coordinate in the image as it was sent, so that
// they lie on the submitted image, and says by how much to turn it (PageResult.orientation).
import type { Box, Point, TextRegion } from './page-result.ts';

/** Regions found in the image turned by 180°, with their geometry in the image's own frame. */
export function regionsTurnedBack(regions: readonly TextRegion[], width: number, height: number): TextRegion[] {
  const point = ([x, y]: Point): Point => [width - x, height - y];
  const box = (b: Box): Box => ({ x: width - b.x - b.width, y: height - b.y - b.height, width: b.width, height: b.height });
  return regions.map((region) => ({
    ...region,
    polygon: region.polygon.map(point),
    lines: region.lines.map((line) => ({
      ...line,
      polygon: line.polygon.map(point),
      baseline: line.baseline.map(point),
      words: line.words.map((word) => ({
        ...word,
        box: box(word.box),
        ...(word.polygon ? { polygon: word.polygon.map(point) } : {}),
      })),
    })),
  }));
}
