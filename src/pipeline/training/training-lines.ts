// A training's lines, from the model's stored ground truth (src/intake/ground-truth.ts): each page
// image decoded as a job decodes it, each line cut by the recognizer's own cropping
// (recognition/training/line-crops.ts) and written for the trainer (training-lines-file.ts), the
// held-out lines marked (validation-split.ts) and kept, with their page, for the service's own
// reading of them once the model is trained (held-out-reading.ts).
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { GroundTruthDocument, GroundTruthLine } from '../../intake/ground-truth.ts';
import { prepareImage } from '../../recognition/image/prepare-image.ts';
import type { CropSpec } from '../../recognition/training/line-crops.ts';
import { writeLinesFile, writePageLines, type TrainingLineRow } from '../../recognition/training/training-lines-file.ts';
import { heldOutLines, splitKind } from '../../recognition/training/validation-split.ts';

/** A ground-truth page with the lines held out of training. */
export interface HeldOutPage {
  pageNumber: number;
  name: string;
  imageKey: string;
  lines: GroundTruthLine[];
}

export interface TrainingLines {
  /** lines.jsonl, for finetune.py --lines. */
  file: string;
  linesTrain: number;
  linesValidation: number;
  split: 'page' | 'line';
  heldOut: HeldOutPage[];
}

/** The folder (and line id prefix) of a page in the lines file: its number, not its uploaded name. */
const pageFolder = (pageNumber: number): string => String(pageNumber).padStart(4, '0');

export async function writeTrainingLines(
  blobs: BlobStore,
  groundTruth: GroundTruthDocument,
  spec: CropSpec,
  out: string,
  options: { maxPixels: number; signal: AbortSignal },
): Promise<TrainingLines> {
  const held = heldOutLines(groundTruth.pages);
  const rows: TrainingLineRow[] = [];
  const heldOut: HeldOutPage[] = [];
  for (const [index, page] of groundTruth.pages.entries()) {
    options.signal.throwIfAborted();
    const { raster } = await prepareImage(await blobs.get(page.imageKey), { name: page.name, maxPixels: options.maxPixels });
    rows.push(...(await writePageLines(out, pageFolder(page.pageNumber), raster, page.lines, spec, held[index])));
    const lines = page.lines.filter((_, line) => held[index][line]);
    if (lines.length > 0) heldOut.push({ pageNumber: page.pageNumber, name: page.name, imageKey: page.imageKey, lines });
  }
  const linesValidation = heldOut.reduce((sum, page) => sum + page.lines.length, 0);
  return {
    file: writeLinesFile(out, rows),
    linesTrain: rows.length - linesValidation,
    linesValidation,
    split: splitKind(groundTruth.pages.length),
    heldOut,
  };
}
