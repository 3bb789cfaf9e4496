// Line recognition: each detected piece is cut out of the full-resolution page along
// its own direction (so slanted lines come out straight), scaled to the model's
// height, batched with pieces of similar width, run through the CTC model and decoded.
import { frameForRect, samplePatch, type PatchFrame, type RgbImage } from '../image/raster.ts';
import type { RotatedRect } from '../page/geometry.ts';
import type { CharacterClasses } from '../models/charset.ts';
import type { RecognitionSpec } from '../models/model-spec.ts';
import { floatTensor, runModel, whiteValue, writeNormalisedPlanes, type InferenceSession } from '../models/onnx.ts';
import { PipelineError } from '../page/errors.ts';
import type { DecodedCharacter } from '../decoding/ctc-decode.ts';

export interface LineCrop {
  /** Maps crop pixels (u, v) to page pixels. */
  frame: PatchFrame;
  width: number;
  height: number;
  /** Interleaved RGB, 0..255. */
  pixels: Float32Array;
}

/** A recognised character with its horizontal span in crop pixels. */
export interface PlacedCharacter {
  text: string;
  start: number;
  end: number;
  confidence: number;
}

/** The best reading's share of the beam's final probability and the runners-up (reading/word-alternatives.ts). */
export interface CompetingReadings {
  share: number;
  runnersUp: { characters: PlacedCharacter[]; share: number }[];
}

/** Inputs wider than this many pixels in total (batch size x padded width) are split into several runs. */
const BATCH_PIXEL_COLUMNS = 2048;
const MAX_BATCH = 8;
/** A batch only takes lines up to this much wider than its narrowest (padding is wasted work). */
const BATCH_WIDTH_SPREAD = 1.35;

type CropSize = Pick<RecognitionSpec, 'inputHeight' | 'minWidth' | 'maxWidth'> & Partial<Pick<RecognitionSpec, 'resampling'>>;

export function cropLine(image: RgbImage, rect: RotatedRect, spec: CropSize, flip = false): LineCrop {
  const height = spec.inputHeight;
  const width = cropWidth(rect, spec);
  const frame = frameForRect(rect, width, height, flip);
  return { frame, width, height, pixels: samplePatch(image, frame, width, height, spec.resampling) };
}

/** The width of cropLine's crop of `rect`, known before it is cut. */
export function cropWidth(rect: RotatedRect, spec: CropSize): number {
  const scale = spec.inputHeight / Math.max(rect.height, 1);
  return Math.min(spec.maxWidth, Math.max(spec.minWidth, Math.round(rect.width * scale)));
}

/**
 * Crops not cut yet: their widths (which plan the batches; each crop cut is that wide) and how to
 * cut each one. scoreCrops cuts a batch's crops while the model runs the batch before it.
 */
export interface CropSource {
  readonly widths: readonly number[];
  cut(index: number): LineCrop;
}

export type ModelGate = <T>(task: () => Promise<T>) => Promise<T>;

/**
 * Decodes `steps` rows of class scores (`offset`, rows `stride` apart) into characters;
 * `logits` says whether the rows are raw scores / log-probabilities or probabilities.
 */
export type CtcDecoder = (scores: Float32Array, offset: number, stride: number, steps: number, logits: boolean) => DecodedCharacter[];

/** The model's class scores for one crop: `steps` rows of `classCount` values, one after the other. */
export interface CropScores {
  scores: Float32Array;
  steps: number;
  classCount: number;
  /** Crop pixels per output frame. */
  pixelsPerStep: number;
  /** Crop width in pixels (characters are kept inside it). */
  width: number;
  /** Raw scores or log-probabilities (true) or probabilities (false). */
  logits: boolean;
}

/**
 * Runs the model over the crops, batched by width; returns each crop's own frames, or what `take`
 * makes of them as soon as their batch is out of the model. A greedy reading keeps its characters
 * and not the frames: PP-OCRv4's frames are 6 625 classes wide, about 4 MB a printed line, and a
 * page's worth of them held at once was the peak of a printed page.
 *
 * The model runs in the inference worker (models/onnx.ts) while this thread waits, so the next
 * batch is cut and written while the model runs this one, and `take` works on a batch while the
 * model runs the next: at most two batches' inputs and one's output are held at once.
 * `pause` gives the event loop a turn between crops (threads/event-loop-slices.ts).
 */
export async function scoreCrops<Result = CropScores>(
  session: InferenceSession,
  spec: RecognitionSpec,
  classes: CharacterClasses,
  crops: readonly LineCrop[] | CropSource,
  gate: ModelGate,
  take: (frames: CropScores) => Result = (frames) => frames as Result,
  pause: () => Promise<void> | undefined = () => undefined,
): Promise<Result[]> {
  const source: CropSource = Array.isArray(crops)
    ? { widths: crops.map((crop) => crop.width), cut: (index) => crops[index] }
    : (crops as CropSource);
  const results: Result[] = new Array(source.widths.length);
  const height = spec.inputHeight;
  const classCount = classes.symbols.length;
  const batches = planBatches(
    source.widths.map((width) => ({ width: width + spec.trailingPadding })),
    spec.widthMultiple,
  );
  /** Cuts and writes a batch's input and queues its run; the run is wrapped so that it is not awaited here. */
  const submit = async (batch: Batch): Promise<{ run: Promise<ModelOutput> }> => {
    const plane = batch.width * height;
    const input = new Float32Array(batch.indices.length * spec.channels * plane);
    for (const [slot, cropIndex] of batch.indices.entries()) {
      const crop = source.cut(cropIndex);
      writeNormalisedPlanes(crop.pixels, crop.width, height, spec, input, slot * spec.channels * plane, batch.width);
      if (spec.padding === 'white') padWhite(input, slot * spec.channels * plane, spec, crop.width, batch.width, height);
      await pause();
    }
    const run = gate(() => runModel(session, floatTensor(input, [batch.indices.length, spec.channels, height, batch.width])));
    // awaited in turn below; until then a failure must not count as unhandled
    run.catch(() => undefined);
    return { run };
  };
  let next = batches.length > 0 ? await submit(batches[0]) : null;
  for (const [position, batch] of batches.entries()) {
    const current = next as { run: Promise<ModelOutput> };
    next = position + 1 < batches.length ? await submit(batches[position + 1]) : null;
    const output = await current.run;
    if (output.dims.length !== 3 || output.dims[2] !== classCount) {
      throw new PipelineError(
        'model_mismatch',
        `recognition output has shape [${output.dims.join(', ')}] but the charset gives ${classCount} classes (charset lines${spec.appendSpace ? ' + space' : ''} + blank)`,
      );
    }
    const ntc = spec.outputLayout === 'NTC';
    const steps = ntc ? output.dims[1] : output.dims[0];
    const pixelsPerStep = batch.width / steps;
    for (const [slot, cropIndex] of batch.indices.entries()) {
      const width = source.widths[cropIndex];
      const validSteps = framesCovering(width, pixelsPerStep, steps);
      // NTC: the line's frames are one run of the batch's output, handed on as a view of it (PP-OCRv4's
      // are 6,625 classes wide: a copy was 4 MB a printed line, made and dropped); TNC interleaves
      // the lines' frames, so they are copied out
      const scores = ntc
        ? output.data.subarray(slot * steps * classCount, (slot * steps + validSteps) * classCount)
        : new Float32Array(validSteps * classCount);
      if (!ntc)
        for (let t = 0; t < validSteps; t += 1) {
          const row = (t * batch.indices.length + slot) * classCount;
          scores.set(output.data.subarray(row, row + classCount), t * classCount);
        }
      results[cropIndex] = take({ scores, steps: validSteps, classCount, pixelsPerStep, width, logits: spec.output === 'logits' });
    }
  }
  return results;
}

type ModelOutput = Awaited<ReturnType<typeof runModel>>;

/**
 * The output frames that cover a line `width` pixels wide (one more than its last column's, where
 * the model may still close a character), of the `steps` its padded input gave.
 */
export function framesCovering(width: number, pixelsPerStep: number, steps: number): number {
  return Math.min(steps, Math.ceil(width / pixelsPerStep) + 1);
}

/** Decodes one crop's frames and places the characters in crop pixels. */
export function placeCharacters(frames: CropScores, decode: CtcDecoder): PlacedCharacter[] {
  return placeDecoded(frames, decode(frames.scores, 0, frames.classCount, frames.steps, frames.logits));
}

/** Decoded characters (frame steps) placed in crop pixels. */
export function placeDecoded(frames: CropScores, decoded: readonly DecodedCharacter[]): PlacedCharacter[] {
  return decoded.map((character) => ({
    text: character.text,
    start: Math.min(frames.width, character.start * frames.pixelsPerStep),
    end: Math.min(frames.width, character.end * frames.pixelsPerStep),
    confidence: character.confidence,
  }));
}

function padWhite(input: Float32Array, offset: number, spec: RecognitionSpec, from: number, width: number, height: number): void {
  for (let c = 0; c < spec.channels; c += 1) {
    const value = whiteValue(spec, c);
    for (let y = 0; y < height; y += 1) {
      const row = offset + (c * height + y) * width;
      input.fill(value, row + from, row + width);
    }
  }
}

interface Batch {
  indices: number[];
  width: number;
}

/** Groups crops of similar width (narrowest first), each batch padded to its widest, rounded up to `multiple`. */
export function planBatches(crops: readonly { width: number }[], multiple: number): Batch[] {
  const order = crops.map((_, index) => index).sort((a, b) => crops[a].width - crops[b].width);
  const batches: Batch[] = [];
  let current: number[] = [];
  const padded = (width: number): number => Math.ceil(width / multiple) * multiple;
  for (const index of order) {
    const width = padded(crops[index].width);
    const first = current.length > 0 ? crops[current[0]].width : width;
    if (
      current.length > 0 &&
      (current.length >= MAX_BATCH || width * (current.length + 1) > BATCH_PIXEL_COLUMNS || width > first * BATCH_WIDTH_SPREAD)
    ) {
      batches.push({ indices: current, width: padded(crops[current[current.length - 1]].width) });
      current = [];
    }
    current.push(index);
  }
  if (current.length > 0) batches.push({ indices: current, width: padded(crops[current[current.length - 1]].width) });
  return batches;
}
