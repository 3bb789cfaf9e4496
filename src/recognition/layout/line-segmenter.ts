// Line segmentation with a trained model (train/seg_train.py): the page in grey, scaled so that its
// longer side is the model's size, one model run, the baseline and line-region maps (half the input
// scale) vectorised into baselines and outlines (vectorise-lines.ts), in page pixels.
import sharp from 'sharp';
import type { Point } from '../page/page-result.ts';
import type { RgbImage } from '../image/raster.ts';
import type { SegmentationSpec } from '../models/model-spec.ts';
import { floatTensor, runModel, whiteValue, writeNormalisedPlanes, type InferenceSession } from '../models/onnx.ts';
import { PipelineError } from '../page/errors.ts';
import { vectoriseLines } from './vectorise-lines.ts';

export interface SegmentedLine {
  /** Left to right, page pixels. */
  baseline: Point[];
  /** Closed outline (no repeated closing point), page pixels. */
  polygon: Point[];
}

/** Where the time of one segmentation goes (filled in when passed; bench/segmentation.ts). */
export interface SegmentationTimings {
  /** Scaling the page to the model's size and writing the input tensor. */
  prepareMs: number;
  modelMs: number;
  vectoriseMs: number;
}

/** The map channels the model outputs, in order. */
const BASELINE_CHANNEL = 0;
const REGION_CHANNEL = 1;
/** Line ends (hwr-seg 2 on); channel 2, the outline boundary, only helps training. */
const ENDS_CHANNEL = 3;

export async function segmentLines(
  session: InferenceSession,
  spec: SegmentationSpec,
  image: RgbImage,
  timings?: SegmentationTimings,
): Promise<SegmentedLine[]> {
  let started = performance.now();
  const ratio = spec.maxSideLength / Math.max(image.width, image.height);
  const width = Math.max(1, Math.round(image.width * ratio));
  const height = Math.max(1, Math.round(image.height * ratio));
  const inputWidth = Math.ceil(width / spec.sizeMultiple) * spec.sizeMultiple;
  const inputHeight = Math.ceil(height / spec.sizeMultiple) * spec.sizeMultiple;
  const resized = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .resize(width, height, { fit: 'fill', kernel: 'lanczos3' })
    .raw()
    .toBuffer();
  const input = new Float32Array(inputWidth * inputHeight).fill(whiteValue(spec, 0));
  writeNormalisedPlanes(resized, width, height, spec, input, 0, inputWidth);
  if (timings) timings.prepareMs = performance.now() - started;
  started = performance.now();
  const output = await runModel(session, floatTensor(input, [1, 1, inputHeight, inputWidth]));
  const [channels, mapHeight, mapWidth] = output.dims.slice(1);
  if (output.dims.length !== 4 || channels < 2 || mapHeight * 2 !== inputHeight || mapWidth * 2 !== inputWidth) {
    throw new PipelineError(
      'model_mismatch',
      `segmentation output has shape [${output.dims.join(', ')}], expected [1, 3 or 4, ${inputHeight / 2}, ${inputWidth / 2}]`,
    );
  }
  if (timings) timings.modelMs = performance.now() - started;
  started = performance.now();
  // The maps of the page itself, without the padding.
  const maps = { width: Math.ceil(width / 2), height: Math.ceil(height / 2) };
  const channel = (index: number): Float32Array => {
    const plane = new Float32Array(maps.width * maps.height);
    const base = index * mapWidth * mapHeight;
    for (let y = 0; y < maps.height; y += 1)
      plane.set(output.data.subarray(base + y * mapWidth, base + y * mapWidth + maps.width), y * maps.width);
    return plane;
  };
  const lines = vectoriseLines(
    {
      ...maps,
      baseline: channel(BASELINE_CHANNEL),
      region: channel(REGION_CHANNEL),
      ends: channels > ENDS_CHANNEL ? channel(ENDS_CHANNEL) : undefined,
    },
    { baselineThreshold: spec.baselineThreshold, regionThreshold: spec.regionThreshold, endThreshold: spec.endThreshold },
  );
  // Map coordinates are continuous (pixel i spans [i, i + 1)); one map pixel is 2 input pixels.
  const sx = (2 * image.width) / width;
  const sy = (2 * image.height) / height;
  const toPage = ([x, y]: Point): Point => [Math.min(image.width - 1, x * sx), Math.min(image.height - 1, y * sy)];
  const segmented = lines.map((line) => ({ baseline: line.baseline.map(toPage), polygon: line.polygon.map(toPage) }));
  if (timings) timings.vectoriseMs = performance.now() - started;
  return segmented;
}
