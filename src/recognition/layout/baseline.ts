// Baseline of a line piece: in the straightened piece, the row below which ink
// thins out (descenders are sparse, the body of the writing is dense).
import type { Point } from '../page/page-result.ts';
import { frameForRect, greyRows, paperAndInk, patchToPage, samplePatch, type RgbImage } from '../image/raster.ts';
import type { RotatedRect } from '../page/geometry.ts';

const PROFILE_HEIGHT = 32;
const BODY_FRACTION = 0.35;

/**
 * The baseline of one piece as a left-to-right pair of page points. The profile only counts dark
 * pixels a row, so the piece is sampled once an output pixel, not averaged: a quarter of the work on
 * a printed page's pieces, and the val pages' lines matched as before (docs/recognition.md, "Line crops").
 */
export function pieceBaseline(image: RgbImage, rect: RotatedRect): [Point, Point] {
  const width = Math.max(8, Math.min(1024, Math.round((rect.width * PROFILE_HEIGHT) / Math.max(rect.height, 1))));
  const frame = frameForRect(rect, width, PROFILE_HEIGHT);
  const row = baselineRow(samplePatch(image, frame, width, PROFILE_HEIGHT, 'bilinear'), width, PROFILE_HEIGHT);
  return [patchToPage(frame, 0, row), patchToPage(frame, width, row)];
}

/** The baseline row (0..height) of an RGB patch with dark writing on a light ground. */
export function baselineRow(pixels: Float32Array, width: number, height: number): number {
  const grey = greyRows(pixels, width, 0, height);
  const { paper, ink } = paperAndInk(grey, 0.02);
  const threshold = ink + (paper - ink) * 0.5;
  const profile = new Float64Array(height);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) if (grey[y * width + x] < threshold) profile[y] += 1;
  }
  let peak = 0;
  for (let y = 1; y < height; y += 1) if (profile[y] > profile[peak]) peak = y;
  if (profile[peak] === 0 || paper - ink < 20) return Math.round(height * 0.75);
  let bottom = peak;
  while (bottom + 1 < height && profile[bottom + 1] >= BODY_FRACTION * profile[peak]) bottom += 1;
  return bottom + 1;
}
