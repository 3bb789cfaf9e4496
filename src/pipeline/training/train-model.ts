// One training of an account's model, as the trainer role runs it (docs/models.md, "Training"):
// the ground truth's lines cut by the recognizer's own cropping, the held-out ones marked; the
// PyTorch trainer run on them from the base model, resuming from the checkpoints kept in the blob
// store; the model it exports read on the held-out lines against its base through the page
// pipeline's recognition; the model directory stored. The worker (src/workers/tasks/
// training-worker.ts) records what happens as the model's events.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { trainedModelPrefix } from '../../blobs/blob-keys.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';
import { readGroundTruth } from '../../intake/ground-truth.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { OcrEngine } from '../../recognition/engine/ocr-engine.ts';
import { DEFAULT_MODEL } from '../../../domain/model.ts';
import { loadModelSpec } from '../../recognition/models/model-manifest.ts';
import { withTrainedRecognizer } from '../../recognition/models/trained-recognizer.ts';
import { cerMargin, errorRate, type LineScores, sumScores } from '../../recognition/training/error-rates.ts';
import { readHeldOut } from './held-out-reading.ts';
import { localModelDirectory, restoreCheckpoints, storeCheckpoints, storeModelDirectory } from './model-files.ts';
import { runTrainer, type TrainerEvent } from './trainer-process.ts';
import { writeTrainingLines } from './training-lines.ts';

export interface ModelToTrain {
  modelId: string;
  /** `default`, or the id of a ready model of the account (its directory under trainedModelPrefix). */
  baseModel: string;
  groundTruthKey: string;
}

export interface EpochProgress {
  epoch: number;
  trainLoss: number;
  validationCer: number;
}

export interface TrainingContext {
  blobs: BlobStore;
  config: Pick<Config, 'training' | 'limits' | 'dataDir'>;
  /** The Python with PyTorch the trainer runs with. */
  python: string;
  /** The engine jobs read with by default: the base of `default`, and the setup every model is read in. */
  sharedEngine: OcrEngine;
  /** Aborted when the model is cancelled or the worker stops: the trainer checkpoints and stops. */
  signal: AbortSignal;
  log: Logger;
  /** Each epoch the trainer reports, in order. */
  onEpoch(progress: EpochProgress): Promise<void>;
  /** More trainer arguments (tests: a small plan). */
  trainerArgs?: readonly string[];
  /** How often the trainer checkpoints, in minutes (default finetune.py's). */
  checkpointMinutes?: number;
}

export type TrainingOutcome =
  | { kind: 'interrupted' }
  | {
      kind: 'trained';
      cerBefore: number;
      cerAfter: number;
      werBefore: number;
      werAfter: number;
      cerMargin: number;
      linesTrain: number;
      linesValidation: number;
      trainingMinutes: number;
      modelKey: string;
    };

/**
 * A trained model reads its held-out lines better than its base only when its CER is lower by more
 * than chance on so few lines would give: 1.645 standard errors of the per-line differences (one-
 * sided 95 %). Ground truth whose text does not match its images (nonsense) gives no such gain.
 */
const GAIN_CONFIDENCE_Z = 1.645;

/** A training's scratch folder, under DATA_DIR: its lines, the trainer's run and its export; removed after each attempt. */
export const trainingWorkDir = (dataDir: string, modelId: string): string => path.join(dataDir, 'training', modelId);

export async function trainModel(model: ModelToTrain, context: TrainingContext): Promise<TrainingOutcome> {
  const { blobs, config, signal, log } = context;
  const work = trainingWorkDir(config.dataDir, model.modelId);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const base = await baseModel(model.baseModel, context);
  try {
    const groundTruth = await readGroundTruth(blobs, model.groundTruthKey);
    const lines = await writeTrainingLines(blobs, groundTruth, loadModelSpec(base.directory).recognition, path.join(work, 'lines'), {
      maxPixels: config.limits.maxImagePixels,
      signal,
    });
    const run = path.join(work, 'run');
    const restored = await restoreCheckpoints(blobs, model.modelId, run);
    log.info(
      { lines_train: lines.linesTrain, lines_validation: lines.linesValidation, split: lines.split, checkpoints_restored: restored },
      restored > 0 ? 'training resumes from its checkpoint' : 'training starts',
    );
    let stored = 0;
    const out = path.join(work, 'model');
    const outcome = await runTrainer({
      python: context.python,
      base: base.directory,
      lines: lines.file,
      run,
      out,
      maxMinutes: config.training.maxMinutes,
      threads: config.training.threads,
      niceness: config.training.niceness,
      quantize: config.training.quantize,
      baseCache: path.join(config.dataDir, 'training', 'base-cache'),
      ...(context.checkpointMinutes === undefined ? {} : { checkpointMinutes: context.checkpointMinutes }),
      extraArgs: ['--name', model.modelId, ...(context.trainerArgs ?? [])],
      signal,
      onEvent: async (event: TrainerEvent) => {
        if (event.event === 'epoch')
          await context.onEpoch({ epoch: Number(event.epoch), trainLoss: Number(event.train_loss), validationCer: Number(event.val_cer) });
        else if (event.event === 'checkpoint') stored = await storeCheckpoints(blobs, model.modelId, run, stored);
        else if (event.event === 'started' || event.event === 'finished') log.info({ trainer: event }, `trainer ${event.event}`);
      },
    });
    if (outcome.kind === 'interrupted') {
      // SIGTERM's checkpoint: the next attempt (a handed-back task) resumes from it.
      await storeCheckpoints(blobs, model.modelId, run, stored);
      return outcome;
    }
    const trained = await context.sharedEngine.withRecognizer(withTrainedRecognizer(context.sharedEngine.spec, loadModelSpec(out)));
    const reading = { maxPixels: config.limits.maxImagePixels, signal };
    let linesBefore: LineScores[];
    let linesAfter: LineScores[];
    try {
      linesBefore = await readHeldOut(base.engine, blobs, lines.heldOut, reading);
      linesAfter = await readHeldOut(trained, blobs, lines.heldOut, reading);
    } finally {
      await trained.close();
    }
    const [before, after] = [sumScores(linesBefore), sumScores(linesAfter)];
    const modelKey = trainedModelPrefix(model.modelId);
    await storeModelDirectory(blobs, out, modelKey);
    return {
      kind: 'trained',
      cerBefore: errorRate(before.characters),
      cerAfter: errorRate(after.characters),
      werBefore: errorRate(before.words),
      werAfter: errorRate(after.words),
      cerMargin: cerMargin(linesBefore, linesAfter, GAIN_CONFIDENCE_Z),
      linesTrain: lines.linesTrain,
      linesValidation: lines.linesValidation,
      trainingMinutes: Number(outcome.finished.minutes),
      modelKey,
    };
  } finally {
    await base.release();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The model trained from: its directory, and the engine that reads with it (the shared one for `default`). */
async function baseModel(
  baseModelId: string,
  context: TrainingContext,
): Promise<{ directory: string; engine: OcrEngine; release(): Promise<void> }> {
  const shared = context.sharedEngine;
  if (baseModelId === DEFAULT_MODEL)
    return { directory: path.dirname(shared.spec.recognition.file), engine: shared, release: async () => {} };
  const directory = await localModelDirectory(
    context.blobs,
    trainedModelPrefix(baseModelId),
    path.join(context.config.dataDir, 'training', 'bases'),
    baseModelId,
  );
  const engine = await shared.withRecognizer(withTrainedRecognizer(shared.spec, loadModelSpec(directory)));
  return { directory, engine, release: () => engine.close() };
}
