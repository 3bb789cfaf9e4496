// Typed failures of the export step. `code` is stable: the engine copies it into the
// job's failure event and clients see it in `error_message` (no HTTP status of its own).
// Every code is retryable, as every export failure has always been: the export is tried again
// up to PAGE_RETRY_LIMIT times before the job fails. A missing or broken stored file fails the
// same way again, so those retries cost seconds, never a wrong result; marking the codes
// permanent would fail such jobs sooner, a change of behaviour left to a commit of its own.
import { CodedError, type ErrorCatalog, type ErrorSpec } from '../../domain/errors.ts';

const RETRIED: ErrorSpec<null> = { status: null, retryable: true };

export const EXPORT_ERRORS = {
  /** A page's stored result cannot be read from the blob store. */
  page_result_missing: RETRIED,
  /** A page's stored result is not JSON, not a page result, or is another page's. */
  page_result_invalid: RETRIED,
  /** A page's stored image cannot be read from the blob store (the PDF needs it). */
  page_image_missing: RETRIED,
  /** A page image that cannot be decoded or embedded in the PDF. */
  image_unsupported: RETRIED,
} as const satisfies ErrorCatalog<string, null>;
export type ExportErrorCode = keyof typeof EXPORT_ERRORS;

export class ExportError extends CodedError<ExportErrorCode, null> {
  /** 1-based page number the failure belongs to, when it belongs to one. */
  readonly pageNumber: number | null;

  constructor(code: ExportErrorCode, message: string, options: { pageNumber?: number; cause?: unknown } = {}) {
    super(code, EXPORT_ERRORS[code], message, options);
    this.name = 'ExportError';
    this.pageNumber = options.pageNumber ?? null;
  }
}
