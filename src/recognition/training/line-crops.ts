// Training lines cut by the service's own code: for each ground-truth line of a page (its outline,
// baseline and text, as an uploaded PageXML/ALTO layout gives them), the very image the recognizer
// reads for that line when a job brings the same layout. The same steps as a job, each by the code a
// job runs: the line as a layout line (layout/uploaded-layout.ts, layout/outlined-line.ts: the
// rectangle along its baseline narrowed to OUTLINE_CROP_HEIGHT), the piece the engine reads for it
// (engine/ocr-engine.ts: the whole line's rectangle where the recognizer reads whole lines), the
// manifest's `cropHeightScale` (reading/line-recognizer.ts) and the crop itself, sampled from the
// page and scaled to `inputHeight` (reading/text-recognizer.ts cropLine). The trainer
// (train/finetune.py, fed by train/cut_lines.ts) then learns from what recognition sees.
import type { RgbImage } from '../image/raster.ts';
import type { LayoutLine } from '../layout/group-lines.ts';
import { outlinedLine } from '../layout/outlined-line.ts';
import type { UploadedLine } from '../layout/uploaded-layout.ts';
import type { RecognitionSpec } from '../models/model-spec.ts';
import { enclosingRect, type RotatedRect } from '../page/geometry.ts';
import { cropLine, type LineCrop } from '../reading/text-recognizer.ts';

/** What a recognizer's manifest says about cutting a line (`resampling` too: a training crop is filtered as a reading crop). */
export type CropSpec = Pick<RecognitionSpec, 'inputHeight' | 'minWidth' | 'maxWidth' | 'cropHeightScale' | 'readWholeLines' | 'resampling'>;

export interface TrainingLineCrop {
  /** The line's id in the layout file. */
  id: string;
  /** Its transcription as the file gives it (the caller normalises and filters). */
  text: string;
  /** The rectangle of the page read for the line (page pixels), `cropHeightScale` applied. */
  rect: RotatedRect;
  /** The crop: `inputHeight` rows, interleaved RGB 0..255 (as the recognizer's batches take it). */
  crop: LineCrop;
}

/**
 * The pieces the engine reads for one layout line with this recognizer, before `cropHeightScale`:
 * the rectangle around all its pieces where the recognizer reads whole lines, else each piece
 * (OcrEngine's readLines). An uploaded line is one piece either way.
 */
export function piecesRead(line: LayoutLine, spec: Pick<RecognitionSpec, 'readWholeLines'>): RotatedRect[] {
  return spec.readWholeLines ? [enclosingRect(line.fragments, line.angle)] : line.fragments;
}

/** A piece as LineRecognizer.read cuts it: `cropHeightScale` times its height, centred, then scaled to the model's height. */
export function cropPiece(image: RgbImage, piece: RotatedRect, spec: CropSpec): { rect: RotatedRect; crop: LineCrop } {
  const scale = spec.cropHeightScale;
  const rect = scale === 1 ? piece : { ...piece, height: piece.height * scale };
  return { rect, crop: cropLine(image, rect, spec) };
}

/** A line of ground truth: an uploaded layout's line, or a stored ground truth's (src/intake/ground-truth.ts). */
export type GroundTruthLine = Pick<UploadedLine, 'id' | 'text' | 'polygon' | 'baseline'>;

/**
 * Each line (outline in image pixels, clamped, at least 3 points; baseline or none) cut as the
 * recognizer reads it on this page (the page image as image/prepare-image.ts makes it: upright
 * 8-bit RGB), in the order given. The layout line is made as layoutRegionsOf makes an uploaded
 * line's.
 */
export function cutTrainingLines(image: RgbImage, lines: readonly GroundTruthLine[], spec: CropSpec): TrainingLineCrop[] {
  return lines.map((line) => {
    // an outlined line is one piece, so the recognizer reads one crop for it either way
    const [piece] = piecesRead(outlinedLine(line.polygon, line.baseline), spec);
    return { id: line.id, text: line.text, ...cropPiece(image, piece, spec) };
  });
}

/**
 * A crop's grey levels as the recognizer computes them before normalising (models/onnx.ts
 * writeNormalisedPlanes: 0.299 R + 0.587 G + 0.114 B), rounded to 8 bits for a PNG file: within
 * half a level of what the model is fed.
 */
export function greyLevels(crop: LineCrop): Uint8Array {
  const { pixels, width, height } = crop;
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < grey.length; i += 1) {
    const value = 0.299 * pixels[i * 3] + 0.587 * pixels[i * 3 + 1] + 0.114 * pixels[i * 3 + 2];
    grey[i] = Math.min(255, Math.max(0, Math.round(value)));
  }
  return grey;
}
