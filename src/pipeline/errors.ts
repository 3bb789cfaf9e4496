// Typed failures of the page pipeline. `code` is stable (clients and the job engine
// match on it); `message` is for people. None of these is worth retrying: the same
// image or model directory fails the same way again.

export const PIPELINE_ERROR_CODES = [
  /** The bytes are not an image sharp can decode (truncated, corrupt, unknown format). */
  'image_unreadable',
  /** More pixels than MAX_IMAGE_PIXELS, or a side so long that it cannot be a page. */
  'image_too_large',
  /** An image with zero or tiny dimensions. */
  'image_too_small',
  /** A multi-page TIFF (or similar) whose further pages are not thumbnails of the first. */
  'image_multipage',
  /** The model directory or its manifest is missing or invalid. */
  'model_invalid',
  /** A model produced outputs that do not fit its manifest (e.g. class count vs charset). */
  'model_mismatch',
] as const;
export type PipelineErrorCode = (typeof PIPELINE_ERROR_CODES)[number];

export class PipelineError extends Error {
  readonly code: PipelineErrorCode;
  readonly retryable = false;

  constructor(code: PipelineErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PipelineError';
    this.code = code;
  }
}

export function isPipelineError(error: unknown): error is PipelineError {
  return error instanceof PipelineError;
}
