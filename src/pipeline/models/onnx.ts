// onnxruntime-node sessions and input tensors.
import * as ort from 'onnxruntime-node';
import { PipelineError } from '../errors.ts';
import type { InputNormalisation } from './model-manifest.ts';

export type { InferenceSession } from 'onnxruntime-node';

export async function createSession(file: string, threads: number): Promise<ort.InferenceSession> {
  try {
    return await ort.InferenceSession.create(file, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      // Line widths vary from page to page; the arena keeps the largest activations ever
      // seen (about 200 MB more at peak over the fixture pages, at no measurable speed gain).
      enableCpuMemArena: false,
    });
  } catch (error) {
    throw new PipelineError('model_invalid', `cannot load the ONNX model ${file}: ${(error as Error).message}`, { cause: error });
  }
}

export function floatTensor(data: Float32Array, dims: number[]): ort.Tensor {
  return new ort.Tensor('float32', data, dims);
}

/** Runs a single-input, single-output model. */
export async function runModel(session: ort.InferenceSession, input: ort.Tensor): Promise<{ data: Float32Array; dims: readonly number[] }> {
  const outputs = await session.run({ [session.inputNames[0]]: input });
  const output = outputs[session.outputNames[0]];
  try {
    if (output.type !== 'float32') throw new PipelineError('model_mismatch', `model output is ${output.type}, expected float32`);
    return { data: output.data as Float32Array, dims: output.dims };
  } finally {
    input.dispose?.();
  }
}

/**
 * Writes interleaved RGB pixels (0..255) as planar, normalised model input:
 * value = (pixel / 255 - mean[c]) / std[c]; one channel means luminance.
 * `target` is a [channels, height, rowStride]-shaped plane block starting at `offset`
 * (rowStride >= width lets callers pad lines of a batch to one width).
 */
export function writeNormalisedPlanes(
  pixels: ArrayLike<number>,
  width: number,
  height: number,
  norm: InputNormalisation,
  target: Float32Array,
  offset: number,
  rowStride: number,
): void {
  const plane = rowStride * height;
  if (norm.channels === 1) {
    const scale = 1 / (255 * norm.std[0]);
    const shift = norm.mean[0] / norm.std[0];
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        const i = (y * width + x) * 3;
        const grey = 0.299 * pixels[i] + 0.587 * pixels[i + 1] + 0.114 * pixels[i + 2];
        target[offset + y * rowStride + x] = grey * scale - shift;
      }
    }
    return;
  }
  const order = norm.channelOrder === 'bgr' ? [2, 1, 0] : [0, 1, 2];
  for (let c = 0; c < 3; c += 1) {
    const source = order[c];
    const scale = 1 / (255 * norm.std[c]);
    const shift = norm.mean[c] / norm.std[c];
    const base = offset + c * plane;
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        target[base + y * rowStride + x] = pixels[(y * width + x) * 3 + source] * scale - shift;
      }
    }
  }
}

/** The value a padded (white) pixel takes in each channel, for filling unused input. */
export function whiteValue(norm: InputNormalisation, channel: number): number {
  return (1 - norm.mean[channel]) / norm.std[channel];
}
