// Optional line orientation: a small classifier says whether a line piece is upside
// down (e.g. a note written along the margin in the other direction).
import type { RgbImage } from '../image/raster.ts';
import type { RotatedRect } from '../page/geometry.ts';
import type { OrientationSpec } from '../models/model-spec.ts';
import { floatTensor, runModel, writeNormalisedPlanes, type InferenceSession } from '../models/onnx.ts';
import { PipelineError } from '../page/errors.ts';
import { cropLine, type ModelGate } from './text-recognizer.ts';

const MAX_BATCH = 32;

/** For each rectangle, whether it should be read turned by 180 degrees. */
export async function upsideDown(
  session: InferenceSession,
  spec: OrientationSpec,
  image: RgbImage,
  rects: readonly RotatedRect[],
  gate: ModelGate,
): Promise<boolean[]> {
  const result: boolean[] = [];
  const plane = spec.inputHeight * spec.inputWidth;
  for (let start = 0; start < rects.length; start += MAX_BATCH) {
    const batch = rects.slice(start, start + MAX_BATCH);
    const input = new Float32Array(batch.length * spec.channels * plane);
    batch.forEach((rect, slot) => {
      const crop = cropLine(image, rect, { inputHeight: spec.inputHeight, minWidth: 1, maxWidth: spec.inputWidth });
      writeNormalisedPlanes(crop.pixels, crop.width, crop.height, spec, input, slot * spec.channels * plane, spec.inputWidth);
    });
    const output = await gate(() =>
      runModel(session, floatTensor(input, [batch.length, spec.channels, spec.inputHeight, spec.inputWidth])),
    );
    const classes = spec.labels.length;
    if (output.dims.length !== 2 || output.dims[1] !== classes) {
      throw new PipelineError(
        'model_mismatch',
        `orientation output has shape [${output.dims.join(', ')}], expected [N, ${classes}] for labels ${JSON.stringify(spec.labels)}`,
      );
    }
    for (let slot = 0; slot < batch.length; slot += 1) {
      let best = 0;
      for (let k = 1; k < classes; k += 1) if (output.data[slot * classes + k] > output.data[slot * classes + best]) best = k;
      result.push(spec.labels[best] === 180 && output.data[slot * classes + best] >= spec.threshold);
    }
  }
  return result;
}
