// Model commands and `decideModel`: the rules of a model's life (domain/model.ts draws them).
// Pure: the caller passes the time and every id, and appends the returned events. The trainer's
// commands are idempotent (ADR 0010): a retried training task that starts again, reports an epoch
// it reported before (it resumed from a checkpoint), or completes or fails again decides nothing.
import type { GroundTruthSkips, ModelEvent } from './events.ts';
import type { ModelState } from './model.ts';
import { reject } from './rejections.ts';

export type ModelCommand =
  | {
      type: 'QueueModelTraining';
      modelId: string;
      accountId: string;
      keyId: string | null;
      label: string | null;
      baseModel: string;
      groundTruthKey: string;
      pagesTotal: number;
      linesTotal: number;
      linesSkipped: GroundTruthSkips;
      warnings: string[];
      now: Date;
    }
  | { type: 'StartModelTraining'; now: Date }
  | { type: 'RecordModelProgress'; epoch: number; trainLoss: number; validationCer: number; now: Date }
  | {
      type: 'CompleteModelTraining';
      cerBefore: number;
      cerAfter: number;
      werBefore: number;
      werAfter: number;
      /**
       * How much lower than `cerBefore` `cerAfter` must be to count as better, not chance (the
       * measure's noise on the held-out lines); 0: any lower CER.
       */
      cerMargin?: number;
      linesTrain: number;
      linesValidation: number;
      trainingMinutes: number;
      modelKey: string;
      now: Date;
    }
  | { type: 'FailModelTraining'; reason: string; now: Date }
  | { type: 'CancelModelTraining'; now: Date }
  | { type: 'RetireModel'; now: Date };

export function decideModel(state: ModelState, command: ModelCommand): ModelEvent[] {
  if (command.type === 'QueueModelTraining') return queue(state, command);
  if (state.status === null) reject('model_not_found');
  const now = command.now.toISOString();

  switch (command.type) {
    case 'StartModelTraining':
      if (state.status === 'training') return [];
      assertNotEnded(state);
      return [{ type: 'ModelTrainingStarted', data: { startedAt: now } }];

    case 'RecordModelProgress': {
      assertNotEnded(state);
      if (state.status === 'queued') reject('model_not_training');
      if (!Number.isInteger(command.epoch) || command.epoch < 0) throw new Error(`epoch ${command.epoch} is not a count`);
      if (state.lastEpoch !== null && command.epoch <= state.lastEpoch) return [];
      const { epoch, trainLoss, validationCer } = command;
      assertFinite({ trainLoss, validationCer });
      return [{ type: 'ModelTrainingProgressed', data: { epoch, trainLoss, validationCer } }];
    }

    case 'CompleteModelTraining': {
      if (state.status === 'ready') return [];
      assertNotEnded(state);
      if (state.status === 'queued') reject('model_not_training');
      const { cerBefore, cerAfter, werBefore, werAfter, linesTrain, linesValidation, trainingMinutes, modelKey } = command;
      const cerMargin = command.cerMargin ?? 0;
      assertFinite({ cerBefore, cerAfter, werBefore, werAfter, cerMargin, linesTrain, linesValidation, trainingMinutes });
      return [
        {
          type: 'ModelTrained',
          data: {
            finishedAt: now,
            cerBefore,
            cerAfter,
            werBefore,
            werAfter,
            linesTrain,
            linesValidation,
            trainingMinutes,
            modelKey,
            cerMargin,
            // Kept either way; a model that reads its held-out lines no better than its base (by more than the margin) says so.
            notBetter: !(cerAfter < cerBefore - cerMargin),
          },
        },
      ];
    }

    case 'FailModelTraining':
      if (state.status === 'failed') return [];
      assertNotEnded(state);
      return [{ type: 'ModelTrainingFailed', data: { failedAt: now, reason: command.reason } }];

    case 'CancelModelTraining':
      if (state.status === 'cancelled') return [];
      if (state.status !== 'queued' && state.status !== 'training') reject('model_already_finished');
      return [{ type: 'ModelTrainingCancelled', data: { cancelledAt: now, previousState: state.status } }];

    case 'RetireModel':
      if (state.status === 'retired') return [];
      if (state.status === 'cancelled') reject('model_cancelled');
      if (state.status === 'failed') reject('model_already_finished', 'The training failed: there is no model to retire.');
      if (state.status !== 'ready') reject('model_not_trained', 'Only a ready model can be retired; cancel a training instead.');
      return [{ type: 'ModelRetired', data: { retiredAt: now } }];
  }
}

function queue(state: ModelState, command: Extract<ModelCommand, { type: 'QueueModelTraining' }>): ModelEvent[] {
  if (state.status !== null) reject('model_already_exists');
  if (command.pagesTotal < 1 || command.linesTotal < 1) throw new Error('a training needs at least one page and one line');
  return [
    {
      type: 'ModelTrainingQueued',
      data: {
        modelId: command.modelId,
        accountId: command.accountId,
        keyId: command.keyId,
        label: command.label,
        baseModel: command.baseModel,
        groundTruthKey: command.groundTruthKey,
        pagesTotal: command.pagesTotal,
        linesTotal: command.linesTotal,
        linesSkipped: command.linesSkipped,
        warnings: command.warnings,
        createdAt: command.now.toISOString(),
      },
    },
  ];
}

/** A training that was cancelled, or has ended (ready, failed, retired), takes no trainer command. */
function assertNotEnded(state: ModelState): void {
  if (state.status === 'cancelled') reject('model_cancelled');
  if (state.status === 'ready' || state.status === 'failed' || state.status === 'retired') reject('model_already_finished');
}

function assertFinite(figures: Record<string, number>): void {
  for (const [name, value] of Object.entries(figures)) {
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name} ${value} is not a non-negative number`);
  }
}
