// Layout quality against ground truth with line geometry (PAGE or ALTO): which
// ground-truth line each recognised line overlaps, and how far the reading order agrees.
import { allLines, type PageResult, type TextLine } from '../../src/recognition/page/page-result.ts';
import { boundingBox, intersectBoxes } from '../../src/recognition/page/geometry.ts';

/**
 * For each recognised line (in reading order), the index of the ground-truth line it
 * overlaps most (at least 30% of the smaller box), or -1.
 */
export function matchLines(page: PageResult, truth: readonly TextLine[]): number[] {
  const truthBoxes = truth.map((line) => boundingBox(line.polygon));
  return allLines(page).map((line) => {
    const box = boundingBox(line.polygon);
    let best = -1;
    let bestArea = 0;
    truthBoxes.forEach((candidate, index) => {
      const overlap = intersectBoxes(box, candidate);
      const area = overlap ? overlap.width * overlap.height : 0;
      if (area > bestArea) {
        bestArea = area;
        best = index;
      }
    });
    const smaller = best < 0 ? 0 : Math.min(box.width * box.height, truthBoxes[best].width * truthBoxes[best].height);
    return best >= 0 && bestArea >= 0.3 * smaller ? best : -1;
  });
}

/**
 * Share of pairs of recognised lines (matched to different ground-truth lines) that come
 * in the ground truth's order: 1 is the same reading order, 0.5 is chance.
 */
export function readingOrderAgreement(matches: readonly number[]): number {
  const matched = matches.filter((index) => index >= 0);
  let agree = 0;
  let pairs = 0;
  for (let i = 0; i < matched.length; i += 1) {
    for (let j = i + 1; j < matched.length; j += 1) {
      if (matched[i] === matched[j]) continue;
      pairs += 1;
      if (matched[i] < matched[j]) agree += 1;
    }
  }
  return pairs === 0 ? 0 : agree / pairs;
}
