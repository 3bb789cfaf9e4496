// Request and response types of the HTTP API, as a client sees them (JSON). Written by hand
// for readers; test/unit/client-types.test.ts checks every name and enum here against the
// OpenAPI document the service serves (src/http/openapi.ts), so the two cannot drift apart.

import { type LlmTier, type PdfFormat, PIPELINE_STEPS, type PipelineStep, type Preset } from '../shared/job-options.ts';

// The submission's choices, the same lists the service checks against.
export { LLM_TIERS, type LlmTier, PDF_FORMATS, type PdfFormat, PRESETS, type Preset } from '../shared/job-options.ts';
export const JOB_STATES = ['queued', 'processing', 'done', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_STATES: readonly JobState[] = ['done', 'failed', 'cancelled'];
export const STEPS = PIPELINE_STEPS;
export type Step = PipelineStep;
export const CALLBACK_STATES = ['waiting', 'pending', 'retrying', 'delivered', 'abandoned', 'not_sent'] as const;
export type CallbackState = (typeof CALLBACK_STATES)[number];

/** Form fields of POST /v1/process-scan besides the file (`scan_zip`). */
export interface SubmitOptions {
  llm_tier?: LlmTier;
  preset?: Preset;
  /** `all`, or a comma list from layout,recognition,correction,export. */
  pipeline_steps?: string;
  pdf_format?: PdfFormat;
  /** HTTPS address for the signed callback. */
  webhook_url?: string;
  /** `default`, or the id of one of the account's ready models (docs/models.md). */
  model?: string;
}
export const SUBMIT_FIELDS = ['scan_zip', 'llm_tier', 'preset', 'pipeline_steps', 'pdf_format', 'webhook_url', 'model'] as const;

/** 202 answer to a submission. */
export interface Submission {
  job_id: string;
  state: 'queued';
  page_count: number;
  created_at: string;
  expires_at: string;
  status_url: string;
  result_url: string;
}

export interface CallbackStatus {
  state: CallbackState;
  attempts: number;
  last_status: number | null;
  next_attempt_at: string | null;
}

export interface JobStatus {
  job_id: string;
  state: JobState;
  page_count: number;
  pages_done: number;
  current_step: Step | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  expires_at: string;
  error_message: string | null;
  warning_message: string | null;
  status_url: string;
  /** Present only when state is done. */
  result_url?: string;
  /** null without webhook_url. */
  callback: CallbackStatus | null;
}

export interface JobEvent {
  position: string;
  version: number;
  type: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  recorded_at: string;
}

export interface JobEvents {
  job_id: string;
  events: JobEvent[];
}

export interface CorrectionUsage {
  provider: string;
  model: string;
  pages: number;
  input_tokens: number;
  output_tokens: number;
}

export interface Usage {
  account_id: string;
  from: string | null;
  to: string | null;
  jobs: number;
  pages: number;
  /** Models whose training completed in the period (ready, or retired since). */
  models_trained: number;
  /** The lines they were trained on (billed). */
  lines_trained: number;
  correction: CorrectionUsage[];
}

// Models trained on the account's ground truth (docs/models.md).
export const MODEL_STATES = ['queued', 'training', 'ready', 'failed', 'cancelled', 'retired'] as const;
export type ModelState = (typeof MODEL_STATES)[number];
/** A model no longer changes by itself in these states (`ready` may still be retired). */
export const MODEL_END_STATES: readonly ModelState[] = ['ready', 'failed', 'cancelled', 'retired'];

/** Form fields of POST /v1/models besides the file (`training_zip`). */
export interface TrainOptions {
  /** A name for the model, at most 100 characters. */
  label?: string;
  /** `default`, or the id of one of the account's ready models to train on from. */
  base_model?: string;
}
export const TRAIN_FIELDS = ['training_zip', 'label', 'base_model'] as const;

/** 202 answer to a training upload. */
export interface ModelSubmission {
  model_id: string;
  state: 'queued';
  label: string | null;
  created_at: string;
  status_url: string;
  lines_total: number;
  pages_total: number;
}

export interface ModelLinesSkipped {
  no_text: number;
  no_geometry: number;
  outside_image: number;
  too_small: number;
  unlearnable_characters: number;
}

export interface ModelProgressPoint {
  epoch: number;
  train_loss: number;
  validation_cer: number;
  recorded_at: string;
}

export interface ModelProgress {
  epoch: number;
  train_loss: number;
  validation_cer: number;
  history: ModelProgressPoint[];
}

/** Measured on the held-out lines with the base model (before) and the trained one (after). */
export interface ModelFigures {
  cer_before: number;
  cer_after: number;
  wer_before: number;
  wer_after: number;
  lines_train: number;
  lines_validation: number;
  training_minutes: number;
  not_better: boolean;
}

export interface ModelStatus {
  model_id: string;
  label: string | null;
  state: ModelState;
  base_model: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  pages_total: number;
  lines_total: number;
  lines_skipped: ModelLinesSkipped;
  /** null before the trainer's first epoch. */
  progress: ModelProgress | null;
  /** null until trained. */
  figures: ModelFigures | null;
  warnings: string[];
  error_message: string | null;
  status_url: string;
}

export interface ModelList {
  models: ModelStatus[];
}

/** application/problem+json body of every error answer. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  /** Whether the same request, sent again unchanged, may succeed (docs/contract.md, "Error codes"). */
  retryable: boolean;
  instance?: string;
}

// The property names of each type, for the check against the OpenAPI document. `satisfies`
// keeps each list within its type; the Exact checks below make each list cover its type.
export const RESPONSE_FIELDS = {
  Submission: ['job_id', 'state', 'page_count', 'created_at', 'expires_at', 'status_url', 'result_url'],
  JobStatus: [
    'job_id',
    'state',
    'page_count',
    'pages_done',
    'current_step',
    'created_at',
    'started_at',
    'finished_at',
    'expires_at',
    'error_message',
    'warning_message',
    'status_url',
    'result_url',
    'callback',
  ],
  CallbackStatus: ['state', 'attempts', 'last_status', 'next_attempt_at'],
  JobEvents: ['job_id', 'events'],
  JobEvent: ['position', 'version', 'type', 'data', 'metadata', 'recorded_at'],
  Usage: ['account_id', 'from', 'to', 'jobs', 'pages', 'models_trained', 'lines_trained', 'correction'],
  CorrectionUsage: ['provider', 'model', 'pages', 'input_tokens', 'output_tokens'],
  Problem: ['type', 'title', 'status', 'detail', 'code', 'retryable', 'instance'],
  ModelSubmission: ['model_id', 'state', 'label', 'created_at', 'status_url', 'lines_total', 'pages_total'],
  ModelStatus: [
    'model_id',
    'label',
    'state',
    'base_model',
    'created_at',
    'started_at',
    'finished_at',
    'pages_total',
    'lines_total',
    'lines_skipped',
    'progress',
    'figures',
    'warnings',
    'error_message',
    'status_url',
  ],
  ModelLinesSkipped: ['no_text', 'no_geometry', 'outside_image', 'too_small', 'unlearnable_characters'],
  ModelProgress: ['epoch', 'train_loss', 'validation_cer', 'history'],
  ModelProgressPoint: ['epoch', 'train_loss', 'validation_cer', 'recorded_at'],
  ModelFigures: ['cer_before', 'cer_after', 'wer_before', 'wer_after', 'lines_train', 'lines_validation', 'training_minutes', 'not_better'],
  ModelList: ['models'],
} as const satisfies {
  Submission: readonly (keyof Submission)[];
  JobStatus: readonly (keyof JobStatus)[];
  CallbackStatus: readonly (keyof CallbackStatus)[];
  JobEvents: readonly (keyof JobEvents)[];
  JobEvent: readonly (keyof JobEvent)[];
  Usage: readonly (keyof Usage)[];
  CorrectionUsage: readonly (keyof CorrectionUsage)[];
  Problem: readonly (keyof Problem)[];
  ModelSubmission: readonly (keyof ModelSubmission)[];
  ModelStatus: readonly (keyof ModelStatus)[];
  ModelLinesSkipped: readonly (keyof ModelLinesSkipped)[];
  ModelProgress: readonly (keyof ModelProgress)[];
  ModelProgressPoint: readonly (keyof ModelProgressPoint)[];
  ModelFigures: readonly (keyof ModelFigures)[];
  ModelList: readonly (keyof ModelList)[];
};

/** Properties that may be absent (`?:`), for the check of `required`. */
export const OPTIONAL_FIELDS = { JobStatus: ['result_url'], Problem: ['instance'] } as const;

type Covers<T, List extends readonly PropertyKey[]> = Exclude<keyof T, List[number]> extends never ? true : never;
const exact: [
  Covers<Submission, (typeof RESPONSE_FIELDS)['Submission']>,
  Covers<JobStatus, (typeof RESPONSE_FIELDS)['JobStatus']>,
  Covers<CallbackStatus, (typeof RESPONSE_FIELDS)['CallbackStatus']>,
  Covers<JobEvents, (typeof RESPONSE_FIELDS)['JobEvents']>,
  Covers<JobEvent, (typeof RESPONSE_FIELDS)['JobEvent']>,
  Covers<Usage, (typeof RESPONSE_FIELDS)['Usage']>,
  Covers<CorrectionUsage, (typeof RESPONSE_FIELDS)['CorrectionUsage']>,
  Covers<Problem, (typeof RESPONSE_FIELDS)['Problem']>,
  Covers<Required<SubmitOptions> & { scan_zip: unknown }, typeof SUBMIT_FIELDS>,
  Covers<ModelSubmission, (typeof RESPONSE_FIELDS)['ModelSubmission']>,
  Covers<ModelStatus, (typeof RESPONSE_FIELDS)['ModelStatus']>,
  Covers<ModelLinesSkipped, (typeof RESPONSE_FIELDS)['ModelLinesSkipped']>,
  Covers<ModelProgress, (typeof RESPONSE_FIELDS)['ModelProgress']>,
  Covers<ModelProgressPoint, (typeof RESPONSE_FIELDS)['ModelProgressPoint']>,
  Covers<ModelFigures, (typeof RESPONSE_FIELDS)['ModelFigures']>,
  Covers<ModelList, (typeof RESPONSE_FIELDS)['ModelList']>,
  Covers<Required<TrainOptions> & { training_zip: unknown }, typeof TRAIN_FIELDS>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];
void exact;
