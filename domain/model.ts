// A model's state, folded from its stream (`model-<id>`, docs/models.md). Pure.
//
//   (none) ── QueueModelTraining ──▶ queued ── StartModelTraining ──▶ training ── CompleteModelTraining ──▶ ready
//                                      │  └──── FailModelTraining ──▶ failed ◀──┘                              │
//                                      └─ CancelModelTraining ─▶ cancelled ◀─ CancelModelTraining ─┘      RetireModel
//                                                                                                            ▼
//                                                                                                         retired
import type { GroundTruthSkips, ModelEvent } from './events.ts';

export const MODEL_STATES = ['queued', 'training', 'ready', 'failed', 'cancelled', 'retired'] as const;
export type ModelStatus = (typeof MODEL_STATES)[number];

/** `base_model` of a training, and `model` of a job, that names the shipped recognizer. */
export const DEFAULT_MODEL = 'default';

export interface ModelState {
  /** Number of events folded (the stream version). */
  version: number;
  status: ModelStatus | null;
  modelId: string;
  accountId: string;
  label: string | null;
  baseModel: string;
  groundTruthKey: string;
  pagesTotal: number;
  linesTotal: number;
  linesSkipped: GroundTruthSkips | null;
  createdAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** The last epoch recorded (progress of a resumed training only grows); null before the first. */
  lastEpoch: number | null;
  /** Where the trained model directory is stored; set when ready. */
  modelKey: string | null;
  notBetter: boolean | null;
  errorMessage: string | null;
}

export function initialModelState(): ModelState {
  return {
    version: 0,
    status: null,
    modelId: '',
    accountId: '',
    label: null,
    baseModel: DEFAULT_MODEL,
    groundTruthKey: '',
    pagesTotal: 0,
    linesTotal: 0,
    linesSkipped: null,
    createdAt: null,
    startedAt: null,
    finishedAt: null,
    lastEpoch: null,
    modelKey: null,
    notBetter: null,
    errorMessage: null,
  };
}

export function evolveModel(state: ModelState, event: ModelEvent): ModelState {
  const next: ModelState = { ...state, version: state.version + 1 };
  switch (event.type) {
    case 'ModelTrainingQueued': {
      const data = event.data;
      return {
        ...next,
        status: 'queued',
        modelId: data.modelId,
        accountId: data.accountId,
        label: data.label,
        baseModel: data.baseModel,
        groundTruthKey: data.groundTruthKey,
        pagesTotal: data.pagesTotal,
        linesTotal: data.linesTotal,
        linesSkipped: data.linesSkipped,
        createdAt: data.createdAt,
      };
    }
    case 'ModelTrainingStarted':
      return { ...next, status: 'training', startedAt: event.data.startedAt };
    case 'ModelTrainingProgressed':
      return { ...next, lastEpoch: event.data.epoch };
    case 'ModelTrained':
      return {
        ...next,
        status: 'ready',
        finishedAt: event.data.finishedAt,
        modelKey: event.data.modelKey,
        notBetter: event.data.notBetter,
      };
    case 'ModelTrainingFailed':
      return { ...next, status: 'failed', finishedAt: event.data.failedAt, errorMessage: event.data.reason };
    case 'ModelTrainingCancelled':
      return { ...next, status: 'cancelled', finishedAt: event.data.cancelledAt };
    case 'ModelRetired':
      return { ...next, status: 'retired' };
  }
}

export function foldModel(events: readonly ModelEvent[]): ModelState {
  return events.reduce(evolveModel, initialModelState());
}
