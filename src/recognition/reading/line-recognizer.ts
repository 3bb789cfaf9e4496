// One recognition model with its character classes and decoder: reads line pieces
// (crop, batched model runs, greedy or beam-search CTC decoding, word spaces from
// gaps where the model asks for them). The engine holds one or two of these.
import path from 'node:path';
import type { BeamSearchOptions } from '../models/beam-search-options.ts';
import { loadCharNgramFile, PER_LANGUAGE_MODELS, type CharNgramModel } from '../decoding/char-ngram-lm.ts';
import { beamSearchCtcReadings, type BeamReadings } from '../decoding/ctc-beam-search.ts';
import { allKnownWords, knownWordsFor, type KnownWords } from '../decoding/known-words.ts';
import { decodeCtc } from '../decoding/ctc-decode.ts';
import type { LineFrames } from '../decoding/ctc-score.ts';
import { mostLikelyLanguage } from '../decoding/page-language.ts';
import { PipelineError } from '../page/errors.ts';
import { eventLoopSlices, mapInSlices } from '../threads/event-loop-slices.ts';
import { frameForRect, type RgbImage } from '../image/raster.ts';
import type { RotatedRect } from '../page/geometry.ts';
import { allowedClasses, loadCharacterClasses, type CharacterClasses } from '../models/charset.ts';
import { AUTO_LANGUAGE, type LanguageModelSpec, type RecognitionSpec } from '../models/model-spec.ts';
import { createSession, type InferenceSession, lazySession } from '../models/onnx.ts';
import { calibrateConfidence } from '../models/confidence-calibration.ts';
import { insertGapSpaces } from './gap-spaces.ts';
import {
  cropLine,
  cropWidth,
  placeCharacters,
  placeDecoded,
  scoreCrops,
  type CompetingReadings,
  type CropSource,
  type CropScores,
  type CtcDecoder,
  type LineCrop,
  type ModelGate,
  type PlacedCharacter,
} from './text-recognizer.ts';

/** `beam`: CTC prefix beam search with the model's language model, where it has one; else greedy. */
export type DecoderChoice = 'greedy' | 'beam';

/** What one recognizer read in one piece, with the crop it read it from. */
export interface PieceRead {
  crop: Omit<LineCrop, 'pixels'>;
  characters: PlacedCharacter[];
  /**
   * The model's output frames for the piece, kept for the page's correction guard
   * (decoding/ctc-score.ts); absent for recognizers with more than KEPT_FRAMES_MAX_CLASSES classes.
   */
  frames?: LineFrames;
  /**
   * Beam search only: the best reading's share of the final beams' probability and the readings
   * that lost to it, placed like `characters` (without gap spaces); words' alternatives come from them.
   */
  competing?: CompetingReadings;
}

/** How many of the beam's final readings besides the best are kept to find words' alternatives in. */
const RUNNERS_UP = 12;

/**
 * Frames are kept for recognizers of an alphabet (ours: 146 classes, about 0.3 MB a line), not
 * for those of a script of thousands (PP-OCRv4: 6 625 classes, about 4 MB a printed line).
 */
const KEPT_FRAMES_MAX_CLASSES = 1024;

export interface LineRecognizerOptions {
  /** Name and version reported in page results. */
  source: { name: string; version: string };
  recognition: RecognitionSpec;
  languageModel: LanguageModelSpec | null;
  decoder: DecoderChoice;
  threads: number;
  /** Load the model at its first use (or warm()), not now (onnx.ts lazySession). */
  lazy?: boolean;
}

export class LineRecognizer {
  readonly source: { name: string; version: string };
  readonly spec: RecognitionSpec;
  /** The decoder actually used: beam search needs a language model. */
  readonly decoder: DecoderChoice;
  private readonly session: InferenceSession;
  private readonly classes: CharacterClasses;
  private readonly greedy: CtcDecoder;
  private readonly languageModels: LoadedLanguageModels | null;
  /** Whether each line's frames are kept (by the model's own class count, whatever it hands over). */
  private readonly keepsFrames: boolean;

  private constructor(
    options: LineRecognizerOptions,
    session: InferenceSession,
    classes: CharacterClasses,
    languageModels: LoadedLanguageModels | null,
    keepsFrames: boolean,
  ) {
    this.keepsFrames = keepsFrames;
    this.source = options.source;
    this.spec = options.recognition;
    this.session = session;
    this.classes = classes;
    this.decoder = languageModels ? 'beam' : 'greedy';
    this.languageModels = languageModels;
    this.greedy = (scores, offset, stride, steps, logits) => decodeCtc(scores, offset, stride, steps, classes, logits);
  }

  static async load(options: LineRecognizerOptions): Promise<LineRecognizer> {
    const all = loadCharacterClasses(options.recognition);
    // A model of probabilities decoded with a restricted set of classes hands over only those
    // (graph/keep-output-classes.ts): the same numbers for them, a thirty-fourth of PP-OCRv4's output.
    const allowed = options.recognition.output === 'probabilities' ? allowedClasses(all) : null;
    const languageModels = options.decoder === 'beam' && options.languageModel ? loadLanguageModels(options.languageModel) : null;
    const sessionOptions = { outputClasses: allowed?.indices ?? null };
    const session = options.lazy
      ? lazySession(options.recognition.file, options.threads, sessionOptions)
      : await createSession(options.recognition.file, options.threads, sessionOptions);
    return new LineRecognizer(options, session, allowed?.classes ?? all, languageModels, all.symbols.length <= KEPT_FRAMES_MAX_CLASSES);
  }

  /** Whether the model is loaded now (a lazy one: once first used or warmed). */
  get loaded(): boolean {
    return this.session.loaded;
  }

  /** Loads the model unless it is loaded. */
  warm(): Promise<void> {
    return this.session.warm();
  }

  /**
   * The characters with their confidence as the share right at that confidence, by the
   * manifest's map for the decoder used (confidence-calibration.ts); the same characters without one.
   */
  calibrated(characters: PlacedCharacter[]): PlacedCharacter[] {
    const points = this.spec.confidenceCalibration[this.decoder];
    if (!points) return characters;
    return characters.map((character) => ({ ...character, confidence: calibrateConfidence(character.confidence, points) }));
  }

  get file(): string {
    return this.spec.file;
  }

  /**
   * Reads each piece (rotated rectangles in page pixels); `flips[i]` turns piece i by 180°.
   * `decoder: 'greedy'` reads greedily whatever this recognizer's decoder (a quick look).
   * `pageText`: lines of the same page already read surely (by another recognizer), which count
   * with these pieces' greedy reading in choosing the page's language model.
   */
  async read(
    image: RgbImage,
    pieces: readonly RotatedRect[],
    gate: ModelGate,
    flips?: readonly boolean[],
    decoder: DecoderChoice = this.decoder,
    pageText: readonly string[] = [],
  ): Promise<PieceRead[]> {
    const scale = this.spec.cropHeightScale;
    const flipped = (index: number): boolean => flips?.[index] ?? false;
    const pause = eventLoopSlices();
    const rects = pieces.map((piece) => (scale === 1 ? piece : { ...piece, height: piece.height * scale }));
    // cut batch by batch as scoreCrops needs them (while the model runs the batch before)
    const crops: LineCrop[] = new Array(pieces.length);
    const source: CropSource = {
      widths: rects.map((rect) => cropWidth(rect, this.spec)),
      cut: (index) => {
        crops[index] = cropLine(image, rects[index], this.spec, flipped(index));
        return crops[index];
      },
    };
    let read: PlacedCharacter[][];
    let competing: (CompetingReadings | undefined)[] = [];
    let kept: (LineFrames | undefined)[] = [];
    const lineFrames = (frames: CropScores): LineFrames | undefined =>
      this.keepsFrames ? { scores: frames.scores, steps: frames.steps, logits: frames.logits, classes: this.classes } : undefined;
    const languageModels = decoder === 'beam' ? this.languageModels : null;
    if (!languageModels) {
      const greedy = await scoreCrops(
        this.session,
        this.spec,
        this.classes,
        source,
        gate,
        (frames) => ({ characters: placeCharacters(frames, this.greedy), frames: lineFrames(frames) }),
        pause,
      );
      read = greedy.map((piece) => piece.characters);
      kept = greedy.map((piece) => piece.frames);
    } else {
      const scored = await scoreCrops(this.session, this.spec, this.classes, source, gate, undefined, pause);
      const decode = this.decoderFor(scored, languageModels, pageText);
      const decoded = await mapInSlices(
        scored,
        (frames) => {
          const readings = decode(frames);
          return {
            characters: placeDecoded(frames, readings.characters),
            competing: {
              share: readings.share,
              runnersUp: readings.runnersUp.map((other) => ({ characters: placeDecoded(frames, other.characters), share: other.share })),
            },
          };
        },
        pause,
      );
      read = decoded.map((piece) => piece.characters);
      competing = decoded.map((piece) => piece.competing);
      kept = scored.map(lineFrames);
    }
    const minGap = this.spec.spacesFromGaps;
    return crops.map((crop, index) => ({
      // Character positions are crop columns; the reported frame maps the same columns onto the
      // detected line alone, so word boxes do not reach into the context cut around it.
      crop: {
        frame: scale === 1 ? crop.frame : frameForRect(pieces[index], crop.width, crop.height, flipped(index)),
        width: crop.width,
        height: crop.height,
      },
      characters: minGap === null ? read[index] : insertGapSpaces(read[index], crop.pixels, crop.width, crop.height, { minGap }),
      ...(kept[index] ? { frames: kept[index] } : {}),
      ...(competing[index] ? { competing: competing[index] } : {}),
    }));
  }

  /**
   * Beam search with the language model; with several (`model: "auto"`), the one under which
   * these lines' greedy reading, with the page's text read before, is most likely
   * (decoding/page-language.ts). On a printed page this recognizer reads only the lines the
   * screening is unsure of, sometimes one short line: alone, a dozen characters chose the language.
   */
  private decoderFor(
    scored: readonly CropScores[],
    loaded: LoadedLanguageModels,
    pageText: readonly string[],
  ): (frames: CropScores) => BeamReadings {
    let language = loaded.models.keys().next().value as string;
    if (loaded.models.size > 1) {
      const firstReading = scored.map((frames) =>
        placeCharacters(frames, this.greedy)
          .map((character) => character.text)
          .join(''),
      );
      const likeliest = mostLikelyLanguage(loaded.models, [...pageText, ...firstReading]);
      if (loaded.models.has(likeliest)) language = likeliest;
    }
    const model = loaded.models.get(language) as CharNgramModel;
    const words = loaded.knownWords?.get(language) ?? null;
    const { classes } = this;
    return (frames) =>
      beamSearchCtcReadings(
        frames.scores,
        0,
        frames.classCount,
        frames.steps,
        classes,
        frames.logits,
        model,
        loaded.options,
        words,
        RUNNERS_UP,
      );
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** The model(s) of an LM file beam search chooses from, the search settings and the known words of each model's language. */
interface LoadedLanguageModels {
  models: ReadonlyMap<string, CharNgramModel>;
  options: BeamSearchOptions;
  knownWords: ReadonlyMap<string, KnownWords> | null;
}

/** LM files are large (megabytes of JSON): one parse per file and model selection, per process. */
const languageModelFiles = new Map<string, ReturnType<typeof loadCharNgramFile>>();

/**
 * `model: "auto"` loads every per-language model of the file (all but the joint `all`; `all`
 * when the file has no other), and each page is decoded with the language that fits it.
 */
function loadLanguageModels(spec: LanguageModelSpec): LoadedLanguageModels {
  const file = path.resolve(spec.file);
  const auto = spec.model === AUTO_LANGUAGE;
  const key = `${file}\u0000${auto ? '' : spec.model}`;
  let loaded = languageModelFiles.get(key);
  if (!loaded) {
    loaded = loadCharNgramFile(file, auto ? PER_LANGUAGE_MODELS : spec.model);
    languageModelFiles.set(key, loaded);
  }
  const knownWords = knownWordsFor(spec);
  // the joint model `all` knows every language's words
  const withWords = (models: ReadonlyMap<string, CharNgramModel>): LoadedLanguageModels => ({
    models,
    options: spec,
    knownWords: knownWords && new Map([...models.keys()].map((name) => [name, knownWords.get(name) ?? allKnownWords(knownWords)])),
  });
  if (auto) return withWords(loaded.models);
  const model = loaded.models.get(spec.model);
  if (!model) throw new PipelineError('model_invalid', `the language model ${file} has no model "${spec.model}"`);
  return withWords(new Map([[spec.model, model]]));
}
