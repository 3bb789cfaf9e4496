// Typed failures of the export step. `code` is stable: the engine copies it into the
// job's failure event and clients see it in `error_message`.

export const EXPORT_ERROR_CODES = ['page_result_missing', 'page_result_invalid', 'page_image_missing', 'image_unsupported'] as const;
export type ExportErrorCode = (typeof EXPORT_ERROR_CODES)[number];

export class ExportError extends Error {
  readonly code: ExportErrorCode;
  /** 1-based page number the failure belongs to, when it belongs to one. */
  readonly pageNumber: number | null;

  constructor(code: ExportErrorCode, message: string, options: { pageNumber?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ExportError';
    this.code = code;
    this.pageNumber = options.pageNumber ?? null;
  }
}
