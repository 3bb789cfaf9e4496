// The stored ground truth of a model (`models/<id>/ground-truth/ground-truth.json`, its key in
// ModelTrainingQueued.groundTruthKey): what intake (ground-truth-zip.ts) kept of an upload, the
// pages with their stored images and the lines to train on, each with its text (normalised,
// ground-truth-text.ts) and its outline and baseline in the pixels of the image as the pipeline
// decodes it (EXIF orientation applied). The trainer cuts its line crops from these with the
// recognizer's own cropping, so training sees what recognition sees.
import type { BlobStore } from '../blobs/blob-store.ts';
import type { LayoutFormat } from '../recognition/layout/uploaded-layout.ts';
import type { Point } from '../recognition/page/page-result.ts';

export const GROUND_TRUTH_FORMAT = 'hwr-ground-truth/1';

export interface GroundTruthLine {
  /** The line's id in its layout file. */
  id: string;
  text: string;
  /** Outline, clamped to the image (at least 3 points). */
  polygon: Point[];
  /** Left-to-right baseline, clamped; empty when the file gives none. */
  baseline: Point[];
}

export interface GroundTruthPage {
  /** 1-based, in the natural order of the image paths in the ZIP. */
  pageNumber: number;
  /** The image's path in the ZIP. */
  name: string;
  imageKey: string;
  sha256: string;
  bytes: number;
  width: number;
  height: number;
  /** The layout file's path in the ZIP, where it is stored, and what it was. */
  layoutName: string;
  layoutKey: string;
  layoutFormat: LayoutFormat;
  lines: GroundTruthLine[];
}

export interface GroundTruthDocument {
  format: typeof GROUND_TRUTH_FORMAT;
  pages: GroundTruthPage[];
  linesTotal: number;
  /** Every distinct character of the lines' text, in code point order (the charset a training needs). */
  characters: string[];
}

/** Reads a stored ground truth; throws when the blob is not one. */
export async function readGroundTruth(blobs: BlobStore, key: string): Promise<GroundTruthDocument> {
  const document = JSON.parse((await blobs.get(key)).toString('utf8')) as GroundTruthDocument;
  if (document?.format !== GROUND_TRUTH_FORMAT || !Array.isArray(document.pages))
    throw new Error(`${key} is not a stored ground truth (${GROUND_TRUTH_FORMAT})`);
  return document;
}
