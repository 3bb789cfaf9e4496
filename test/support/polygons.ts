// Point in polygon (even-odd rule), for tests that check a line's outline holds points.
import type { Point } from '../../src/recognition/page/page-result.ts';

export function insidePolygon([x, y]: readonly [number, number], polygon: readonly Point[]): boolean {
  let within = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i];
    const [xj, yj] = polygon[j];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) within = !within;
  }
  return within;
}
