// Typed refusals of a command by `decide`. `code` is stable and reaches clients.
import { CodedError, type ErrorCatalog } from './errors.ts';

export const REJECTION_CODES = {
  job_not_found: 'The job does not exist.',
  job_already_exists: 'A job with this id already exists.',
  job_already_finished: 'The job has already finished (done or failed).',
  job_cancelled: 'The job was cancelled.',
  job_not_started: 'The job has not started processing.',
  job_not_done: 'The job is not done.',
  pages_incomplete: 'Not every page of the job is complete.',
  unknown_page: 'The job has no such page.',
  unknown_line: 'The page has no such line.',
  job_expired: "The job's result has expired: it can no longer be corrected or exported.",
  result_not_expired: 'The result has not reached its expiry time.',
  no_callback: 'The job has no webhook_url or its delivery has ended.',
  account_not_found: 'The account does not exist.',
  account_already_exists: 'The account already exists.',
  key_not_found: 'The API key does not exist.',
  key_already_exists: 'An API key with this id already exists.',
  too_many_api_keys: 'The account has as many active API keys as it may (100); revoke one first.',
  user_not_found: 'The user does not exist.',
  user_already_exists: 'A user with this id or email already exists.',
  invite_not_found: 'The setup link does not exist.',
  invite_used: 'The setup link has already been used.',
  invite_expired: 'The setup link has expired.',
  model_not_found: 'The model does not exist.',
  model_already_exists: 'A model with this id already exists.',
  model_not_training: 'The model is not training.',
  model_not_trained: 'The model has not finished training.',
  model_cancelled: "The model's training was cancelled.",
  model_already_finished: "The model's training has already ended (ready, failed or retired).",
} as const;

export type RejectionCode = keyof typeof REJECTION_CODES;

/**
 * Every rejection code's HTTP status and retryability, chosen on purpose (docs/contract.md,
 * "Rejection codes"): 404 where the thing named does not exist for the caller, 409 where the
 * command conflicts with the state it found. Retryable only where the state the command waits
 * for comes by itself (a job starts, finishes, its pages complete, its result reaches expiry; a
 * model's training starts or ends).
 */
export const REJECTION_ERRORS: ErrorCatalog<RejectionCode, 404 | 409> = {
  job_not_found: { status: 404, retryable: false },
  job_already_exists: { status: 409, retryable: false },
  job_already_finished: { status: 409, retryable: false },
  job_cancelled: { status: 409, retryable: false },
  job_not_started: { status: 409, retryable: true },
  job_not_done: { status: 409, retryable: true },
  pages_incomplete: { status: 409, retryable: true },
  unknown_page: { status: 404, retryable: false },
  unknown_line: { status: 404, retryable: false },
  job_expired: { status: 409, retryable: false },
  result_not_expired: { status: 409, retryable: true },
  no_callback: { status: 409, retryable: false },
  account_not_found: { status: 404, retryable: false },
  account_already_exists: { status: 409, retryable: false },
  key_not_found: { status: 404, retryable: false },
  key_already_exists: { status: 409, retryable: false },
  too_many_api_keys: { status: 409, retryable: false },
  user_not_found: { status: 404, retryable: false },
  user_already_exists: { status: 409, retryable: false },
  invite_not_found: { status: 404, retryable: false },
  invite_used: { status: 409, retryable: false },
  invite_expired: { status: 409, retryable: false },
  model_not_found: { status: 404, retryable: false },
  model_already_exists: { status: 409, retryable: false },
  model_not_training: { status: 409, retryable: true },
  model_not_trained: { status: 409, retryable: true },
  model_cancelled: { status: 409, retryable: false },
  model_already_finished: { status: 409, retryable: false },
};

export class Rejection extends CodedError<RejectionCode, 404 | 409> {
  constructor(code: RejectionCode, detail?: string) {
    super(code, REJECTION_ERRORS[code], detail ?? REJECTION_CODES[code]);
    this.name = 'Rejection';
  }
}

export function reject(code: RejectionCode, detail?: string): never {
  throw new Rejection(code, detail);
}
