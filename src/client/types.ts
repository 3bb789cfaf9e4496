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
  correction: CorrectionUsage[];
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
  Usage: ['account_id', 'from', 'to', 'jobs', 'pages', 'correction'],
  CorrectionUsage: ['provider', 'model', 'pages', 'input_tokens', 'output_tokens'],
  Problem: ['type', 'title', 'status', 'detail', 'code', 'retryable', 'instance'],
} as const satisfies {
  Submission: readonly (keyof Submission)[];
  JobStatus: readonly (keyof JobStatus)[];
  CallbackStatus: readonly (keyof CallbackStatus)[];
  JobEvents: readonly (keyof JobEvents)[];
  JobEvent: readonly (keyof JobEvent)[];
  Usage: readonly (keyof Usage)[];
  CorrectionUsage: readonly (keyof CorrectionUsage)[];
  Problem: readonly (keyof Problem)[];
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
] = [true, true, true, true, true, true, true, true, true];
void exact;
