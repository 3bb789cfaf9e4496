// One exported model directory set up to read the validation lines of htr-lines in the service's
// own code: its recognizer in onnxruntime-node, its LM file and known words, and the lines' images.
// Shared by the evaluations in train/ that decode the same lines in several ways.
import path from 'node:path';
import type { BeamSearchOptions } from '../../src/recognition/models/beam-search-options.ts';
import { loadCharNgramFile, type CharNgramModel } from '../../src/recognition/decoding/char-ngram-lm.ts';
import { beamSearchCtc } from '../../src/recognition/decoding/ctc-beam-search.ts';
import type { DecodedCharacter } from '../../src/recognition/decoding/ctc-decode.ts';
import { knownWordsFor } from '../../src/recognition/decoding/known-words.ts';
import { loadCharacterClasses, type CharacterClasses } from '../../src/recognition/models/charset.ts';
import { loadModelSpec } from '../../src/recognition/models/model-manifest.ts';
import type { LanguageModelSpec, RecognitionSpec } from '../../src/recognition/models/model-spec.ts';
import { createSession, floatTensor, runModel } from '../../src/recognition/models/onnx.ts';
import { type DatasetLine, type LineInput, lineSteps, modelInput, readTar, readValidationLines } from './htr-lines.ts';

/** The model's class scores for one line: `steps` rows of `count` values. */
export interface LineScores {
  scores: Float32Array;
  steps: number;
  count: number;
}

export interface ValidationReader {
  rec: RecognitionSpec;
  /** The manifest's LM settings (beam width, weights, files). */
  lm: LanguageModelSpec;
  classes: CharacterClasses;
  lines: DatasetLine[];
  /** The line's model input: the 64 px JPEG averaged to the model's height, normalised, with the manifest's trailing padding. */
  input(line: DatasetLine): Promise<LineInput>;
  /** Runs the model on an input of the model's height (the input's buffer is handed over); the frames that cover the line. */
  run(input: LineInput): Promise<LineScores>;
  /** Beam search of the line's frames with its language's model and known words (the bonus only when `options.wordBonus` > 0). */
  beam(line: DatasetLine, scores: LineScores, options?: BeamSearchOptions): DecodedCharacter[];
}

/**
 * The "tune" half of the validation documents: those of even position in sorted order, as
 * train/eval_decoding.py --tune splits them; settings are chosen there and reported on the others.
 */
export function tuneDocuments(lines: readonly DatasetLine[]): Set<string> {
  const documents = [...new Set(lines.map((line) => line.document))].sort();
  return new Set(documents.filter((_, index) => index % 2 === 0));
}

export async function validationReader(dir: string, dataset: string, threads = 2): Promise<ValidationReader> {
  const spec = loadModelSpec(dir);
  const rec = spec.recognition;
  const lm = spec.languageModel;
  if (!lm) throw new Error(`${dir} has no language model`);
  const classes = loadCharacterClasses(rec);
  const session = await createSession(rec.file, threads);
  const lmFile = loadCharNgramFile(lm.file);
  // loaded whatever the manifest's bonus, so that a grid can try one
  const knownWords = knownWordsFor({ ...lm, wordBonus: 1 });
  const images = readTar(path.join(dataset, 'val-000.tar'));
  const logits = rec.output === 'logits';
  return {
    rec,
    lm,
    classes,
    lines: readValidationLines(dataset),
    input: (line) => modelInput(images.get(line.file)!, rec),
    async run(input) {
      const output = await runModel(session, floatTensor(input.data, [1, 1, rec.inputHeight, input.width]));
      return { scores: output.data, steps: lineSteps(input, output.dims[1]), count: output.dims[2] };
    },
    beam(line, { scores, steps, count }, options = lm) {
      const model = lmFile.models.get(line.lang) ?? (lmFile.models.get('all') as CharNgramModel);
      const words = options.wordBonus > 0 ? (knownWords?.get(line.lang) ?? null) : null;
      return beamSearchCtc(scores, 0, count, steps, classes, logits, model, options, words);
    },
  };
}
