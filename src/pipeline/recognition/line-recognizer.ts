// One recognition model with its character classes and decoder: reads line pieces
// (crop, batched model runs, greedy or beam-search CTC decoding, word spaces from
// gaps where the model asks for them). The engine holds one or two of these.
import path from 'node:path';
import { loadCharNgramFile, type CharNgramModel } from '../char-ngram-lm.ts';
import { beamSearchCtc, type BeamSearchOptions } from '../ctc-beam-search.ts';
import { PipelineError } from '../errors.ts';
import { frameForRect, type RgbImage } from '../image/raster.ts';
import type { RotatedRect } from '../layout/geometry.ts';
import { loadCharacterClasses, type CharacterClasses } from '../models/charset.ts';
import type { LanguageModelSpec, RecognitionSpec } from '../models/model-manifest.ts';
import { createSession, type InferenceSession } from '../models/onnx.ts';
import { decodeCtc } from './ctc-decode.ts';
import { insertGapSpaces } from './gap-spaces.ts';
import { cropLine, recognizeCrops, type CtcDecoder, type LineCrop, type ModelGate, type PlacedCharacter } from './text-recognizer.ts';

/** `beam`: CTC prefix beam search with the model's language model, where it has one; else greedy. */
export type DecoderChoice = 'greedy' | 'beam';

/** What one recognizer read in one piece, with the crop it read it from. */
export interface PieceRead {
  crop: Omit<LineCrop, 'pixels'>;
  characters: PlacedCharacter[];
}

export interface LineRecognizerOptions {
  /** Name and version reported in page results. */
  source: { name: string; version: string };
  recognition: RecognitionSpec;
  languageModel: LanguageModelSpec | null;
  decoder: DecoderChoice;
  threads: number;
}

export class LineRecognizer {
  readonly source: { name: string; version: string };
  readonly spec: RecognitionSpec;
  /** The decoder actually used: beam search needs a language model. */
  readonly decoder: DecoderChoice;
  private readonly session: InferenceSession;
  private readonly classes: CharacterClasses;
  private readonly decode: CtcDecoder;

  private constructor(options: LineRecognizerOptions, session: InferenceSession, classes: CharacterClasses, decoder: DecoderChoice, decode: CtcDecoder) {
    this.source = options.source;
    this.spec = options.recognition;
    this.session = session;
    this.classes = classes;
    this.decoder = decoder;
    this.decode = decode;
  }

  static async load(options: LineRecognizerOptions): Promise<LineRecognizer> {
    const classes = loadCharacterClasses(options.recognition);
    const lm = options.decoder === 'beam' && options.languageModel ? loadLanguageModel(options.languageModel) : null;
    const session = await createSession(options.recognition.file, options.threads);
    const decode: CtcDecoder = lm
      ? (scores, offset, stride, steps, logits) => beamSearchCtc(scores, offset, stride, steps, classes, logits, lm.model, lm.options)
      : (scores, offset, stride, steps, logits) => decodeCtc(scores, offset, stride, steps, classes, logits);
    return new LineRecognizer(options, session, classes, lm ? 'beam' : 'greedy', decode);
  }

  get file(): string {
    return this.spec.file;
  }

  /** Reads each piece (rotated rectangles in page pixels); `flips[i]` turns piece i by 180°. */
  async read(image: RgbImage, pieces: readonly RotatedRect[], gate: ModelGate, flips?: readonly boolean[]): Promise<PieceRead[]> {
    const scale = this.spec.cropHeightScale;
    const crops = pieces.map((piece, index) => cropLine(image, scale === 1 ? piece : { ...piece, height: piece.height * scale }, this.spec, flips?.[index] ?? false));
    const read = await recognizeCrops(this.session, this.spec, this.classes, crops, gate, this.decode);
    const minGap = this.spec.spacesFromGaps;
    return crops.map((crop, index) => ({
      // Character positions are crop columns; the reported frame maps the same columns onto the
      // detected line alone, so word boxes do not reach into the context cut around it.
      crop: { frame: scale === 1 ? crop.frame : frameForRect(pieces[index], crop.width, crop.height, flips?.[index] ?? false), width: crop.width, height: crop.height },
      characters: minGap === null ? read[index] : insertGapSpaces(read[index], crop.pixels, crop.width, crop.height, { minGap }),
    }));
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** LM files are large (megabytes of JSON): one parse per file, model and process. */
const languageModels = new Map<string, ReturnType<typeof loadCharNgramFile>>();

function loadLanguageModel(spec: LanguageModelSpec): { model: CharNgramModel; options: BeamSearchOptions } {
  const file = path.resolve(spec.file);
  const key = `${file}\u0000${spec.model}`;
  let loaded = languageModels.get(key);
  if (!loaded) {
    loaded = loadCharNgramFile(file, spec.model);
    languageModels.set(key, loaded);
  }
  const model = loaded.models.get(spec.model);
  if (!model) throw new PipelineError('model_invalid', `the language model ${file} has no model "${spec.model}"`);
  return { model, options: { beam: spec.beam, alpha: spec.alpha, beta: spec.beta, prune: spec.prune, maxCandidates: spec.maxCandidates } };
}
