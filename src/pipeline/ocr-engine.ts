// The loaded models of one model directory: detection, recognition, optional
// orientation, with their character classes. Loaded once per process (see
// shared-engine.ts); every model run passes through one semaphore so that
// concurrent pages never use more threads than the machine has cores.
import path from 'node:path';
import type { ModelInfo } from './page-result.ts';
import type { RgbImage } from './image/raster.ts';
import { groupLines } from './layout/group-lines.ts';
import { orderRegions, type LayoutRegion } from './layout/reading-order.ts';
import { detectText, type DetectedBox } from './layout/text-detector.ts';
import { loadCharacterClasses, type CharacterClasses } from './models/charset.ts';
import type { ModelSpec } from './models/model-manifest.ts';
import { createSession, type InferenceSession } from './models/onnx.ts';
import { Semaphore } from './concurrency.ts';
import { insertGapSpaces } from './recognition/gap-spaces.ts';
import { upsideDown } from './recognition/orientation.ts';
import { cropLine, recognizeCrops, type LineCrop, type ModelGate, type PlacedCharacter } from './recognition/text-recognizer.ts';

export interface EngineSettings {
  /** onnxruntime intra-op threads per model run. */
  threads: number;
  /** Model runs at once across all pages of this process. */
  concurrency: number;
}

/** What recognition read in one detected piece, with the crop it read it from. */
export interface PieceReading {
  crop: Omit<LineCrop, 'pixels'>;
  characters: PlacedCharacter[];
}

export class OcrEngine {
  readonly spec: ModelSpec;
  readonly settings: EngineSettings;
  private readonly detection: InferenceSession;
  private readonly recognition: InferenceSession;
  private readonly orientation: InferenceSession | null;
  private readonly classes: CharacterClasses;
  private readonly gate: ModelGate;

  private constructor(
    spec: ModelSpec,
    settings: EngineSettings,
    sessions: { detection: InferenceSession; recognition: InferenceSession; orientation: InferenceSession | null },
    classes: CharacterClasses,
  ) {
    this.spec = spec;
    this.settings = settings;
    this.detection = sessions.detection;
    this.recognition = sessions.recognition;
    this.orientation = sessions.orientation;
    this.classes = classes;
    const semaphore = new Semaphore(settings.concurrency);
    this.gate = (task) => semaphore.run(task);
  }

  static async load(spec: ModelSpec, settings: EngineSettings): Promise<OcrEngine> {
    const classes = loadCharacterClasses(spec.recognition);
    const [detection, recognition, orientation] = await Promise.all([
      createSession(spec.detection.file, settings.threads),
      createSession(spec.recognition.file, settings.threads),
      spec.orientation ? createSession(spec.orientation.file, settings.threads) : Promise.resolve(null),
    ]);
    return new OcrEngine(spec, settings, { detection, recognition, orientation }, classes);
  }

  get models(): ModelInfo[] {
    const info = (role: ModelInfo['role'], file: string): ModelInfo => ({ role, name: `${this.spec.name} (${path.basename(file)})`, version: this.spec.version });
    return [
      info('detection', this.spec.detection.file),
      ...(this.spec.orientation ? [info('orientation', this.spec.orientation.file)] : []),
      info('recognition', this.spec.recognition.file),
    ];
  }

  /** Text lines in regions, in reading order. */
  async layout(image: RgbImage): Promise<LayoutRegion[]> {
    const boxes = await this.gate(() => detectText(this.detection, this.spec.detection, image));
    return orderRegions(groupLines(boxes));
  }

  /** Reads every piece of every line. */
  async read(image: RgbImage, regions: readonly LayoutRegion[]): Promise<Map<DetectedBox, PieceReading>> {
    const pieces = regions.flatMap((region) => region.lines.flatMap((line) => line.fragments));
    const flips = this.orientation && this.spec.orientation ? await upsideDown(this.orientation, this.spec.orientation, image, pieces, this.gate) : pieces.map(() => false);
    const crops = pieces.map((piece, index) => cropLine(image, piece, this.spec.recognition, flips[index]));
    const read = await recognizeCrops(this.recognition, this.spec.recognition, this.classes, crops, this.gate);
    const minGap = this.spec.recognition.spacesFromGaps;
    const characters = minGap === null ? read : read.map((placed, index) => insertGapSpaces(placed, crops[index].pixels, crops[index].width, crops[index].height, { minGap }));
    const readings = new Map<DetectedBox, PieceReading>();
    pieces.forEach((piece, index) => {
      const { frame, width, height } = crops[index];
      readings.set(piece, { crop: { frame, width, height }, characters: characters[index] });
    });
    return readings;
  }

  async close(): Promise<void> {
    await Promise.all([this.detection.release(), this.recognition.release(), this.orientation?.release()]);
  }
}
