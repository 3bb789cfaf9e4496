// The use cases' refusals, each code with its status and retryability (docs/contract.md,
// "Submissions" and "Accounts and users"): the API, the portal and the CLI answer them as the
// catalog says. A submission's refusal is an HTTP answer; an account's or a user's reaches an
// operator through `hwr` (exit 1, the message) and a customer through the portal's forms.
import { CodedError, type ErrorCatalog } from '../../domain/errors.ts';

export const SUBMISSION_ERRORS = {
  /** An Idempotency-Key the account used for a different request within the window. */
  idempotency_key_reused: { status: 409, retryable: false, title: 'Idempotency-Key reused' },
  /** The account has as many unfinished jobs as it may; a retry passes once one finishes. */
  too_many_active_jobs: { status: 429, retryable: true, title: 'Account limit reached' },
  /** The account has as many unprocessed pages as it may (this upload included); a retry passes once pages are done. */
  too_many_queued_pages: { status: 429, retryable: true, title: 'Account limit reached' },
} as const satisfies ErrorCatalog<string, number>;

export const ACCOUNT_ERRORS = {
  invalid_account_name: { status: 400, retryable: false },
  account_exists: { status: 409, retryable: false },
  account_not_found: { status: 404, retryable: false },
  key_not_found: { status: 404, retryable: false },
  invalid_email: { status: 400, retryable: false },
  user_exists: { status: 409, retryable: false },
  user_not_found: { status: 404, retryable: false },
  invite_not_found: { status: 404, retryable: false },
  weak_password: { status: 400, retryable: false },
  wrong_password: { status: 400, retryable: false },
  /** Too many failed passwords for the email or from the address; the window is 15 minutes. */
  throttled: { status: 429, retryable: true },
} as const satisfies ErrorCatalog<string, number>;

/** The models API's refusals (docs/models.md): its own fields, and a model named by a submission or a training. */
export const MODEL_ERRORS = {
  /** No file in the field training_zip of POST /v1/models. */
  training_zip_missing: { status: 400, retryable: false, title: 'Invalid input' },
  /** A label longer than 100 characters or with control characters. */
  invalid_label: { status: 400, retryable: false, title: 'Invalid input' },
  /** A `model` or `base_model` that is neither `default` nor a model id of the account (another account's is unknown). */
  invalid_model: { status: 400, retryable: false, title: 'Invalid input' },
  /** A model of the account that is not ready: still training, failed, cancelled or retired. */
  model_not_ready: { status: 400, retryable: false, title: 'Model not ready' },
  /** PUT /v1/account/default-model: a body that is not `{"model": "default" | "<model id>"}`. */
  invalid_default_model_request: { status: 400, retryable: false, title: 'Invalid input' },
  /** POST /v1/process-scan/{id}/models: a body that is not `{"pages"?, "checked_pages"?, "label"?, "base_model"?}`, or a page the job does not have. */
  invalid_training_request: { status: 400, retryable: false, title: 'Invalid input' },
  /** The job's pages chosen hold no corrected line, and none is marked checked: there is nothing to train on. */
  no_corrected_pages: { status: 400, retryable: false, title: 'Nothing to train on' },
  /** No trainer can run here (TRAINER, a Python with PyTorch): an operator's setup, not the moment, so not retryable. */
  training_unavailable: { status: 503, retryable: false, title: 'Training unavailable' },
} as const satisfies ErrorCatalog<string, number>;

/**
 * Refusals of a page's correction and of reading a page (docs/corrections.md): the body, a
 * line's text, and a job that has no result to correct. `job_failed` and `result_expired` mean
 * what the result download's do.
 */
export const CORRECTION_ERRORS = {
  /** Not a JSON object `{"lines": [{"id", "text"}, …]}` with 1 to 1,000 lines, each id once, no other fields. */
  invalid_correction_body: { status: 400, retryable: false, title: 'Invalid input' },
  /** A line's text over 2,000 characters. */
  line_text_too_long: { status: 400, retryable: false, title: 'Invalid input' },
  /** A line's text with control characters (tabs and line breaks included), lone surrogates or U+FFFE/U+FFFF. */
  line_text_invalid_characters: { status: 400, retryable: false, title: 'Invalid input' },
  /** The job failed: it has no result to read or correct. */
  job_failed: { status: 409, retryable: false, title: 'Result not available' },
  /** The job's result expired (expires_at passed, or its files are gone). */
  result_expired: { status: 410, retryable: false, title: 'Result expired' },
} as const satisfies ErrorCatalog<string, number>;

export type SubmissionErrorCode = keyof typeof SUBMISSION_ERRORS;
export type CorrectionErrorCode = keyof typeof CORRECTION_ERRORS;
export type ModelErrorCode = keyof typeof MODEL_ERRORS;
export type AccountErrorCode = keyof typeof ACCOUNT_ERRORS;

/** A refusal of a submission; `retryAfterSeconds`, where set, is the answer's Retry-After. */
export class SubmissionError extends CodedError<SubmissionErrorCode, number> {
  readonly title: string;
  readonly retryAfterSeconds: number | undefined;
  constructor(code: SubmissionErrorCode, message: string, retryAfterSeconds?: number) {
    super(code, SUBMISSION_ERRORS[code], message);
    this.title = SUBMISSION_ERRORS[code].title;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A refusal of an account, key or user operation. */
export class AccountError extends CodedError<AccountErrorCode, number> {
  constructor(code: AccountErrorCode, message: string) {
    super(code, ACCOUNT_ERRORS[code], message);
  }
}

/** A refusal of the models API, or of a model named by a submission. */
export class ModelError extends CodedError<ModelErrorCode, number> {
  readonly title: string;
  constructor(code: ModelErrorCode, message: string) {
    super(code, MODEL_ERRORS[code], message);
    this.title = MODEL_ERRORS[code].title;
  }
}

/** A refusal of a correction, or of reading a page to correct. */
export class CorrectionError extends CodedError<CorrectionErrorCode, number> {
  readonly title: string;
  constructor(code: CorrectionErrorCode, message: string) {
    super(code, CORRECTION_ERRORS[code], message);
    this.title = CORRECTION_ERRORS[code].title;
  }
}
