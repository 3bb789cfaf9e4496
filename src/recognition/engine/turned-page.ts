// A page read turned (recognition/page-turn.ts) has its lines, words and regions found in the
// turned raster; the page result keeps every coordinate in the image as it was sent, so that they
// lie on the submitted image, and says by how much to turn it (PageResult.orientation).
import type { PageTurn } from '../reading/page-turn.ts';
import type { Box, Point, TextRegion } from '../page/page-result.ts';

/**
 * Maps a point of the page turned clockwise by `turn` (its size `width` x `height`) to the image as
 * sent, and back: the inverse of turning the image (image/raster.ts turnedBy).
 */
export function turnMaps(turn: PageTurn, width: number, height: number): { toImage: (p: Point) => Point; toUpright: (p: Point) => Point } {
  switch (turn) {
    case 0:
      return { toImage: (p) => p, toUpright: (p) => p };
    case 90:
      // the image was `width` px high: upright (x, y) is image (y, width - x)
      return { toImage: ([x, y]) => [y, width - x], toUpright: ([x, y]) => [width - y, x] };
    case 180:
      return { toImage: ([x, y]) => [width - x, height - y], toUpright: ([x, y]) => [width - x, height - y] };
    case 270:
      // the image was `height` px wide: upright (x, y) is image (height - y, x)
      return { toImage: ([x, y]) => [height - y, x], toUpright: ([x, y]) => [y, height - x] };
  }
}

/** An axis-aligned box through a point map (a quarter turn swaps its sides). */
export function mapBox(box: Box, map: (p: Point) => Point): Box {
  const [x1, y1] = map([box.x, box.y]);
  const [x2, y2] = map([box.x + box.width, box.y + box.height]);
  return { x: Math.min(x1, x2), y: Math.min(y1, y2), width: Math.abs(x2 - x1), height: Math.abs(y2 - y1) };
}

/** Regions found in the image turned clockwise by `turn` (the turned raster `width` x `height`), with their geometry in the image as sent. */
export function regionsTurnedBack(regions: readonly TextRegion[], turn: PageTurn, width: number, height: number): TextRegion[] {
  return regionsMapped(regions, turnMaps(turn, width, height).toImage);
}

/**
 * Regions found in a page decoded reduced (image/prepare-image.ts: `scale` raster pixels a page
 * pixel along x and y), with their geometry in the page's own pixels.
 */
export function regionsScaledBack(regions: readonly TextRegion[], scale: { x: number; y: number }): TextRegion[] {
  return regionsMapped(regions, ([x, y]) => [x / scale.x, y / scale.y]);
}

/** Every point, polygon and box of the regions through a point map. */
function regionsMapped(regions: readonly TextRegion[], toImage: (p: Point) => Point): TextRegion[] {
  return regions.map((region) => ({
    ...region,
    polygon: region.polygon.map(toImage),
    lines: region.lines.map((line) => ({
      ...line,
      polygon: line.polygon.map(toImage),
      baseline: line.baseline.map(toImage),
      words: line.words.map((word) => ({
        ...word,
        box: mapBox(word.box, toImage),
        ...(word.polygon ? { polygon: word.polygon.map(toImage) } : {}),
      })),
    })),
  }));
}
