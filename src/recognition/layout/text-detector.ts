// Text detection: the page scaled to the detector's size, one DB model run, the
// probability map turned into rotated boxes in full-resolution page pixels.
import sharp from 'sharp';
import type { RgbImage } from '../image/raster.ts';
import type { DetectionSpec } from '../models/model-spec.ts';
import { floatTensor, runModel, writeNormalisedPlanes, type InferenceSession } from '../models/onnx.ts';
import { PipelineError } from '../page/errors.ts';
import { dbBoxes } from './db-postprocess.ts';
import { convexHull, minAreaRect, rectCorners, type RotatedRect } from '../page/geometry.ts';

export interface DetectedBox extends RotatedRect {
  /** Mean detector probability inside the kernel, 0..1. */
  score: number;
}

export interface DetectionInputSize {
  width: number;
  height: number;
}

/** Input size for a page scaled so that its longer side is `side` pixels at most, rounded to the network's stride. */
export function detectionInputSize(width: number, height: number, side: number, multiple: number): DetectionInputSize {
  const ratio = Math.min(1, side / Math.max(width, height));
  const round = (length: number): number => Math.max(multiple, Math.round((length * ratio) / multiple) * multiple);
  return { width: round(width), height: round(height) };
}

export async function detectText(session: InferenceSession, spec: DetectionSpec, image: RgbImage): Promise<DetectedBox[]> {
  const size = detectionInputSize(image.width, image.height, spec.maxSideLength, spec.sizeMultiple);
  const resized = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .resize(size.width, size.height, { fit: 'fill', kernel: 'lanczos3' })
    .raw()
    .toBuffer();
  const input = new Float32Array(spec.channels * size.width * size.height);
  writeNormalisedPlanes(resized, size.width, size.height, spec, input, 0, size.width);
  const output = await runModel(session, floatTensor(input, [1, spec.channels, size.height, size.width]));
  const [mapHeight, mapWidth] = output.dims.slice(-2);
  if (output.dims.length !== 4 || mapHeight * mapWidth !== output.data.length) {
    throw new PipelineError('model_mismatch', `detection output has shape [${output.dims.join(', ')}], expected [1, 1, H, W]`);
  }
  const boxes = dbBoxes({ data: output.data, width: mapWidth, height: mapHeight }, spec);
  const sx = image.width / mapWidth;
  const sy = image.height / mapHeight;
  return boxes.map((box) => {
    const corners = rectCorners(box).map(([x, y]) => [x * sx, y * sy] as const);
    return { ...minAreaRect(convexHull(corners)), score: box.score };
  });
}
