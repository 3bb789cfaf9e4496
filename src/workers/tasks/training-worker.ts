// Runs one model's training (src/pipeline/training/train-model.ts) for its task on the
// model-training queue and records it on the model's stream: started, each epoch, trained with its
// figures, or failed. A cancelled model's training stops within seconds (watchForModelEnd, then
// SIGTERM to the trainer) and records nothing more; a worker that stops hands the task back after
// the trainer's checkpoint is stored, and the next attempt resumes from it, as does the retry of a
// trainer killed outright (its heartbeat lapses, pg-boss retries the task).
import { checkpointPrefix } from '../../pipeline/training/model-files.ts';
import { trainModel, type TrainingContext } from '../../pipeline/training/train-model.ts';
import { TrainerFailed } from '../../pipeline/training/trainer-process.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { OcrEngine } from '../../recognition/engine/ocr-engine.ts';
import { isOutage } from '../../outage/outage.ts';
import type { Job } from '../../queue/boss.ts';
import type { ModelTrainingTaskData } from '../../queue/queues.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';
import { Rejection } from '../../../domain/rejections.ts';
import { watchForModelEnd } from '../mechanics/cancel-watch.ts';
import { describeError, wasHandedBack } from '../mechanics/task-errors.ts';

export interface TrainingWorkerDeps {
  bus: CommandBus;
  blobs: BlobStore;
  config: Pick<Config, 'training' | 'limits' | 'dataDir'>;
  log: Logger;
  python: string;
  sharedEngine: () => Promise<OcrEngine>;
  /** Attempts after the first before a failure is recorded (the queue's retry limit). */
  retryLimit: number;
  /** For tests: a smaller training plan, checkpoint interval, a faster cancel check. */
  trainerArgs?: readonly string[];
  checkpointMinutes?: number;
  watchIntervalMs?: number;
}

/** finetune.py's refusals of its input: the same on every attempt, so the training fails at once. */
const TRAINER_REFUSALS = new Set(['lines_invalid', 'lines_missing', 'too_few_lines', 'base_invalid', 'no_epoch', 'usage']);

/** The model stopped taking trainer commands (cancelled, or ended by another attempt). */
const isModelEnded = (error: unknown): boolean =>
  error instanceof Rejection && (error.code === 'model_cancelled' || error.code === 'model_already_finished');

export function createTrainingHandler(deps: TrainingWorkerDeps) {
  return async (task: Job<ModelTrainingTaskData>): Promise<void> => {
    const { modelId } = task.data;
    const log = deps.log.child({ model_id: modelId, task_id: task.id, attempt: task.retryCount + 1 });
    const metadata = { actor: 'trainer', causationId: task.id };
    const state = await deps.bus.loadModel(deps.bus.db.pool, modelId);
    if (state.status !== 'queued' && state.status !== 'training') {
      log.info({ state: state.status }, 'training task dropped: the model is not waiting for training');
      return;
    }
    const watch = watchForModelEnd(deps.bus.db.pool, modelId, deps.watchIntervalMs);
    const signal = AbortSignal.any([task.signal, watch.signal]);
    try {
      await deps.bus.model(modelId, { type: 'StartModelTraining', now: new Date() }, metadata);
      const context: TrainingContext = {
        blobs: deps.blobs,
        config: deps.config,
        python: deps.python,
        sharedEngine: await deps.sharedEngine(),
        signal,
        log,
        onEpoch: async (progress) => {
          await deps.bus.model(modelId, { type: 'RecordModelProgress', ...progress, now: new Date() }, metadata);
        },
        ...(deps.trainerArgs ? { trainerArgs: deps.trainerArgs } : {}),
        ...(deps.checkpointMinutes === undefined ? {} : { checkpointMinutes: deps.checkpointMinutes }),
      };
      const outcome = await trainModel({ modelId, baseModel: state.baseModel, groundTruthKey: state.groundTruthKey }, context);
      if (outcome.kind === 'interrupted') {
        if (wasHandedBack(task.signal)) log.info('training handed back: the worker is stopping (resumes from its checkpoint)');
        else await dropCancelled(deps, modelId, log);
        return;
      }
      const { kind: _, ...figures } = outcome;
      await deps.bus.model(modelId, { type: 'CompleteModelTraining', ...figures, now: new Date() }, metadata);
      // The model is stored; its checkpoints are of no more use.
      await deps.blobs.deletePrefix(checkpointPrefix(modelId));
      log.info({ cer_before: figures.cerBefore, cer_after: figures.cerAfter, minutes: figures.trainingMinutes }, 'model trained');
    } catch (error) {
      if (wasHandedBack(task.signal)) {
        log.info('training handed back: the worker is stopping');
        return;
      }
      if (isModelEnded(error) || watch.signal.aborted) {
        await dropCancelled(deps, modelId, log);
        return;
      }
      if (isOutage(error)) throw error;
      // A checkpoint of other lines (the ground truth's cutting changed between attempts): the next attempt starts afresh.
      if (error instanceof TrainerFailed && error.code === 'lines_changed') await deps.blobs.deletePrefix(checkpointPrefix(modelId));
      const refused = error instanceof TrainerFailed && TRAINER_REFUSALS.has(error.code);
      const lastTry = refused || task.retryCount >= deps.retryLimit;
      log.warn({ err: error, last_try: lastTry }, 'training failed');
      if (!lastTry) throw error;
      await failTraining(deps.bus, modelId, describeError(error), task.id);
    } finally {
      watch.stop();
    }
  };
}

async function dropCancelled(deps: Pick<TrainingWorkerDeps, 'blobs'>, modelId: string, log: Logger): Promise<void> {
  await deps.blobs.deletePrefix(checkpointPrefix(modelId));
  log.info('training stopped: the model was cancelled');
}

/** Records a training's failure; a model that ended meanwhile (cancelled) keeps its end. */
export async function failTraining(bus: CommandBus, modelId: string, reason: string, causationId: string): Promise<void> {
  try {
    await bus.model(modelId, { type: 'FailModelTraining', reason, now: new Date() }, { actor: 'trainer', causationId });
  } catch (error) {
    if (!isModelEnded(error)) throw error;
  }
}
