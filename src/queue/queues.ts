// pg-boss queue names and the ids of their tasks. Task ids are derived from what
// they do, so a reaction written twice (a retried command) inserts one task, and
// a cancel can name every task of a job without looking them up.
import { derivedUuid } from '../../domain/ids.ts';

export const QUEUES = {
  page: 'hwr-page',
  export: 'hwr-export',
  callback: 'hwr-callback',
  expireResults: 'hwr-expire-results',
  /** Dead-letter queues: a page, export or callback task that ran out of attempts without settling lands here. */
  pageLost: 'hwr-page-lost',
  exportLost: 'hwr-export-lost',
  callbackLost: 'hwr-callback-lost',
  /** Cron: jobs still running with no live task are failed (docs/reliability.md). */
  sweepStranded: 'hwr-sweep-stranded',
  /** Cron: blob folders `jobs/<id>` and `models/<id>` never recorded are deleted after an hour (orphan-blobs.ts). */
  sweepOrphanBlobs: 'hwr-sweep-orphan-blobs',
  /** One task per model whose training is queued (docs/models.md); the trainer role takes them. */
  modelTraining: 'hwr-model-training',
  /** Dead letters of the model-training queue: a training that ran out of attempts without recording its end. */
  modelTrainingLost: 'hwr-model-training-lost',
} as const;

export interface PageTaskData {
  jobId: string;
  page: number;
}

export interface ExportTaskData {
  jobId: string;
  /**
   * Set for a re-export after corrections (docs/corrections.md): the job's correction count it was
   * scheduled for. A task whose count is no longer the job's newest is dropped (a later one exports).
   */
  correctionVersion?: number;
}

export interface CallbackTaskData {
  jobId: string;
  attempt: number;
}

export interface ModelTrainingTaskData {
  modelId: string;
}

export const pageTaskId = (jobId: string, page: number): string => derivedUuid('hwr-page', jobId, page);
export const exportTaskId = (jobId: string): string => derivedUuid('hwr-export', jobId);
export const reexportTaskId = (jobId: string, correctionVersion: number): string => derivedUuid('hwr-reexport', jobId, correctionVersion);
export const callbackTaskId = (jobId: string, attempt: number): string => derivedUuid('hwr-callback', jobId, attempt);
export const modelTrainingTaskId = (modelId: string): string => derivedUuid('hwr-model-training', modelId);
