// A text line known by its outline and baseline (from an uploaded PageXML/ALTO file, or found by
// the line segmenter) as the engine's layout line: one piece, the rectangle at the line's writing
// direction (its baseline's, else its outline's) that holds its outline, narrowed across the
// writing to OUTLINE_CROP_HEIGHT. The baseline is kept for the page result.
import type { Point } from '../page/page-result.ts';
import { boundingBox, convexHull, enclosingRectOfPoints, minAreaRect, normaliseRect, type RotatedRect } from '../page/geometry.ts';
import type { LayoutLine } from './group-lines.ts';
import { OUTLINE_CROP_HEIGHT } from '../models/outline-crop.ts';

export function outlinedLine(polygon: Point[], baseline: Point[], cropHeight = OUTLINE_CROP_HEIGHT): LayoutLine {
  const rect = lineRect(polygon, baseline, cropHeight);
  return {
    fragments: [{ ...rect, score: 1 }],
    angle: rect.angle,
    polygon,
    box: boundingBox(polygon),
    ...(baseline.length >= 2 ? { baseline } : {}),
  };
}

function lineRect(polygon: Point[], baseline: Point[], cropHeight: number): RotatedRect {
  let angle: number;
  if (baseline.length >= 2) {
    const [x0, y0] = baseline[0];
    const [x1, y1] = baseline[baseline.length - 1];
    angle = Math.atan2(y1 - y0, x1 - x0);
    if (x1 === x0 && y1 === y0) angle = normaliseRect(minAreaRect(convexHull(polygon))).angle;
  } else {
    angle = normaliseRect(minAreaRect(convexHull(polygon))).angle;
  }
  const rect = enclosingRectOfPoints(polygon, angle);
  return { ...rect, width: Math.max(1, rect.width), height: Math.max(1, rect.height * cropHeight) };
}
