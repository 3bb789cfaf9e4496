// Typed failures of the page pipeline. `code` is stable (clients and the job engine
// match on it); `message` is for people. None of these is worth retrying: the same
// image or model directory fails the same way again. None is an HTTP answer of its own:
// a page that fails with one fails its job, whose `error_message` names the code.
import { CodedError, type ErrorCatalog, type ErrorSpec } from '../../../domain/errors.ts';

const PERMANENT: ErrorSpec<null> = { status: null, retryable: false };

export const PIPELINE_ERRORS = {
  /** The bytes are not an image sharp can decode (truncated, corrupt, unknown format). */
  image_unreadable: PERMANENT,
  /** More pixels than MAX_IMAGE_PIXELS, or a side so long that it cannot be a page. */
  image_too_large: PERMANENT,
  /** An image with zero or tiny dimensions. */
  image_too_small: PERMANENT,
  /** A multi-page TIFF (or similar) whose further pages are not thumbnails of the first. */
  image_multipage: PERMANENT,
  /** The model directory or its manifest is missing or invalid. */
  model_invalid: PERMANENT,
  /** A model produced outputs that do not fit its manifest (e.g. class count vs charset). */
  model_mismatch: PERMANENT,
} as const satisfies ErrorCatalog<string, null>;
export type PipelineErrorCode = keyof typeof PIPELINE_ERRORS;

export class PipelineError extends CodedError<PipelineErrorCode, null> {
  constructor(code: PipelineErrorCode, message: string, options?: { cause?: unknown; setting?: string }) {
    super(code, PIPELINE_ERRORS[code], message, options);
    this.name = 'PipelineError';
  }
}

export function isPipelineError(error: unknown): error is PipelineError {
  return error instanceof PipelineError;
}
