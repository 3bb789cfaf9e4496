// DB (Differentiable Binarization) post-processing: the detector's probability map
// becomes text boxes. The map marks shrunk text kernels; each connected kernel gives a
// minimum-area rotated rectangle, scored by the mean probability over the kernel itself
// (PaddleOCR's "slow" score mode: the rectangle of a wavy handwritten line holds much
// background, which sinks the "fast" rectangle score of most lines below the threshold),
// then grown back ("unclipped") by area * ratio / perimeter, as PaddleOCR's DBPostProcess does.
import type { Point } from '../page/page-result.ts';
import { convexHull, minAreaRect, type RotatedRect } from '../page/geometry.ts';

export interface ProbabilityMap {
  data: Float32Array;
  width: number;
  height: number;
}

export interface DbOptions {
  threshold: number;
  boxThreshold: number;
  unclipRatio: number;
  /** Kernels whose short side is below this (map pixels) are noise. */
  minSize?: number;
  maxCandidates?: number;
}

export interface ScoredRect extends RotatedRect {
  score: number;
}

export function dbBoxes(map: ProbabilityMap, options: DbOptions): ScoredRect[] {
  const minSize = options.minSize ?? 3;
  const components = labelComponents(map, options.threshold);
  components.sort((a, b) => b.pixels - a.pixels);
  const boxes: ScoredRect[] = [];
  for (const component of components.slice(0, options.maxCandidates ?? 1000)) {
    const rect = minAreaRect(convexHull(component.outline));
    if (Math.min(rect.width, rect.height) < minSize) continue;
    const score = component.probabilitySum / component.pixels;
    if (score < options.boxThreshold) continue;
    const perimeter = 2 * (rect.width + rect.height);
    const distance = (rect.width * rect.height * options.unclipRatio) / perimeter;
    const grown = { ...rect, width: rect.width + 2 * distance, height: rect.height + 2 * distance };
    if (Math.min(grown.width, grown.height) < minSize + 2) continue;
    boxes.push({ ...grown, score });
  }
  return boxes;
}

interface Component {
  pixels: number;
  probabilitySum: number;
  /** Corners of the first and last pixel of each row: enough for the convex hull. */
  outline: Point[];
}

/** 8-connected components of `map > threshold`, labelled with union-find in one pass. */
export function labelComponents(map: ProbabilityMap, threshold: number): Component[] {
  const { width, height, data } = map;
  const labels = new Int32Array(width * height);
  const parent: number[] = [0];
  const find = (label: number): number => {
    let root = label;
    while (parent[root] !== root) root = parent[root];
    while (parent[label] !== root) {
      const next = parent[label];
      parent[label] = root;
      label = next;
    }
    return root;
  };
  const union = (a: number, b: number): number => {
    const ra = find(a);
    const rb = find(b);
    if (ra === rb) return ra;
    const [low, high] = ra < rb ? [ra, rb] : [rb, ra];
    parent[high] = low;
    return low;
  };
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const i = y * width + x;
      if (data[i] <= threshold) continue;
      let label = 0;
      const neighbours = [
        x > 0 ? i - 1 : -1,
        y > 0 && x > 0 ? i - width - 1 : -1,
        y > 0 ? i - width : -1,
        y > 0 && x < width - 1 ? i - width + 1 : -1,
      ];
      for (const n of neighbours) {
        if (n < 0 || labels[n] === 0) continue;
        label = label === 0 ? find(labels[n]) : union(label, labels[n]);
      }
      if (label === 0) {
        label = parent.length;
        parent.push(label);
      }
      labels[i] = label;
    }
  }

  const byRoot = new Map<number, { pixels: number; probabilitySum: number; outline: Point[]; row: number; first: number; last: number }>();
  const flushRow = (entry: { outline: Point[]; row: number; first: number; last: number }): void => {
    entry.outline.push(
      [entry.first, entry.row],
      [entry.last + 1, entry.row],
      [entry.first, entry.row + 1],
      [entry.last + 1, entry.row + 1],
    );
  };
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const label = labels[y * width + x];
      if (label === 0) continue;
      const root = find(label);
      let entry = byRoot.get(root);
      if (!entry) {
        entry = { pixels: 0, probabilitySum: 0, outline: [], row: y, first: x, last: x };
        byRoot.set(root, entry);
      } else if (entry.row !== y) {
        flushRow(entry);
        entry.row = y;
        entry.first = x;
        entry.last = x;
      } else {
        entry.last = x;
      }
      entry.pixels += 1;
      entry.probabilitySum += data[y * width + x];
    }
  }
  const components: Component[] = [];
  for (const entry of byRoot.values()) {
    flushRow(entry);
    components.push({ pixels: entry.pixels, probabilitySum: entry.probabilitySum, outline: entry.outline });
  }
  return components;
}
