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

/**
 * 8-connected components of `map > threshold`, labelled with union-find in one pass, in the raster
 * order of their first pixels. A union keeps the lower label, so each component's root is its
 * first pixel's label, and the roots are visited in ascending order.
 */
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
  const join = (label: number, neighbour: number): number => {
    if (label === 0) return find(neighbour);
    const other = find(neighbour);
    if (label === other) return label;
    if (label < other) {
      parent[other] = label;
      return label;
    }
    parent[label] = other;
    return other;
  };
  for (let y = 0; y < height; y += 1) {
    const row = y * width;
    for (let x = 0; x < width; x += 1) {
      const i = row + x;
      if (data[i] <= threshold) continue;
      // the neighbours already visited: left, up-left, up, up-right
      let label = 0;
      if (x > 0 && labels[i - 1] !== 0) label = join(label, labels[i - 1]);
      if (y > 0) {
        if (x > 0 && labels[i - width - 1] !== 0) label = join(label, labels[i - width - 1]);
        if (labels[i - width] !== 0) label = join(label, labels[i - width]);
        if (x < width - 1 && labels[i - width + 1] !== 0) label = join(label, labels[i - width + 1]);
      }
      if (label === 0) {
        label = parent.length;
        parent.push(label);
      }
      labels[i] = label;
    }
  }

  // every label's root, found in ascending order: a label's parent is never above it
  const count = parent.length;
  const roots = new Int32Array(count);
  for (let label = 1; label < count; label += 1) roots[label] = parent[label] === label ? label : roots[parent[label]];
  const pixels = new Int32Array(count);
  const probabilitySums = new Float64Array(count);
  const rows = new Int32Array(count);
  const firsts = new Int32Array(count);
  const lasts = new Int32Array(count);
  const outlines: Point[][] = [];
  const flushRow = (root: number): void => {
    const row = rows[root];
    const first = firsts[root];
    const last = lasts[root];
    outlines[root].push([first, row], [last + 1, row], [first, row + 1], [last + 1, row + 1]);
  };
  for (let y = 0; y < height; y += 1) {
    const row = y * width;
    for (let x = 0; x < width; x += 1) {
      const label = labels[row + x];
      if (label === 0) continue;
      const root = roots[label];
      // a component's first pixel, or its first on a new row, starts a run of the row
      if (pixels[root] === 0 || rows[root] !== y) {
        if (pixels[root] === 0) outlines[root] = [];
        else flushRow(root);
        rows[root] = y;
        firsts[root] = x;
      }
      lasts[root] = x;
      pixels[root] += 1;
      probabilitySums[root] += data[row + x];
    }
  }
  const components: Component[] = [];
  for (let root = 1; root < count; root += 1) {
    if (pixels[root] === 0) continue;
    flushRow(root);
    components.push({ pixels: pixels[root], probabilitySum: probabilitySums[root], outline: outlines[root] });
  }
  return components;
}
