// Typed failures of the export step. `code` is stable: the engine copies it into the
// job's failure event and clients see it in `error_message` (no HTTP status of its own).
// A stored file that is missing may come back (a blob store that is down for a while), so those
// codes are retried up to PAGE_RETRY_LIMIT times; a stored file that is there but broken fails
// the same way on every try, so those codes fail the job at the first attempt.
import { CodedError, type ErrorCatalog, type ErrorSpec } from '../../domain/errors.ts';

const RETRIED: ErrorSpec<null> = { status: null, retryable: true };
const PERMANENT: ErrorSpec<null> = { status: null, retryable: false };

export const EXPORT_ERRORS = {
  /** A page's stored result cannot be read from the blob store. */
  page_result_missing: RETRIED,
  /** A page's stored result is not JSON, not a page result, or is another page's. */
  page_result_invalid: PERMANENT,
  /** A page's stored image cannot be read from the blob store (the PDF needs it). */
  page_image_missing: RETRIED,
  /** A page image that cannot be decoded or embedded in the PDF. */
  image_unsupported: PERMANENT,
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
