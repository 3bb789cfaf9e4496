// The portal's own refusals, each with the status its page answers with (docs/contract.md,
// "Portal"). A refusal is a page with the message, not problem+json.
import { CodedError, type ErrorCatalog } from '../../domain/errors.ts';

export const PORTAL_ERRORS = {
  /** An image width the viewer does not serve. */
  invalid_image_width: { status: 400, retryable: false },
  /** A form without its CSRF token, or from another site; reloading the page gives a fresh one. */
  form_expired: { status: 403, retryable: false },
  /** A signed-in form after the session ended. */
  signed_out: { status: 403, retryable: false },
  /** No such job, page, key, model, file or portal page (another account's are not told apart). */
  not_found: { status: 404, retryable: false },
  /** A cancel the job's state refuses. */
  job_not_cancellable: { status: 409, retryable: false },
  /** The result of a job that is not done (yet, or ever). */
  result_not_ready: { status: 409, retryable: true },
  /** A result or page image past its expiry, or no longer stored. */
  result_expired: { status: 410, retryable: false },
  form_too_large: { status: 413, retryable: false },
  form_not_urlencoded: { status: 415, retryable: false },
  /** A stored page image that cannot be decoded for the viewer. */
  page_image_unreadable: { status: 422, retryable: false },
} as const satisfies ErrorCatalog<string, number>;

export type PortalErrorCode = keyof typeof PORTAL_ERRORS;

/** A refusal the portal answers as a page with its message and its code's status. */
export class PortalHttpError extends CodedError<PortalErrorCode, number> {
  constructor(code: PortalErrorCode, message: string) {
    super(code, PORTAL_ERRORS[code], message);
  }
}
