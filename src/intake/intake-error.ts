// The one error type of upload intake. Each code is stable (clients branch on it) and maps to
// an HTTP status and a problem+json title; `detail` names the offending file. docs/intake.md
// lists every code with the rule behind it. None is retryable: the same upload is refused again.
import { CodedError, type ErrorCatalog } from '../../domain/errors.ts';
import { BIDI_CONTROL_CLASS } from '../shared/bidi-controls.ts';

export const INTAKE_ERRORS = {
  upload_too_large: { status: 413, retryable: false, title: 'Upload too large' },
  invalid_zip: { status: 400, retryable: false, title: 'Not a readable ZIP archive' },
  encrypted_zip: { status: 400, retryable: false, title: 'Encrypted ZIP entries are not supported' },
  unsupported_compression: { status: 400, retryable: false, title: 'Unsupported ZIP compression method' },
  unsafe_path: { status: 400, retryable: false, title: 'Unsafe entry path in ZIP' },
  duplicate_entry: { status: 400, retryable: false, title: 'Duplicate entry path in ZIP' },
  zip_bomb: { status: 400, retryable: false, title: 'ZIP exceeds the decompression limits' },
  too_many_entries: { status: 400, retryable: false, title: 'Too many entries in ZIP' },
  no_images: { status: 400, retryable: false, title: 'No images in ZIP' },
  not_an_image: { status: 400, retryable: false, title: 'Entry is not an image' },
  unsupported_image_format: { status: 400, retryable: false, title: 'Unsupported image format' },
  unreadable_image: { status: 400, retryable: false, title: 'Unreadable image' },
  multi_page_image: { status: 400, retryable: false, title: 'Multi-page image' },
  image_too_large: { status: 400, retryable: false, title: 'Image has too many pixels' },
  too_many_pages: { status: 400, retryable: false, title: 'Too many pages' },
  image_too_small: { status: 400, retryable: false, title: 'Image too small to be a page' },
  layout_unmatched: { status: 400, retryable: false, title: 'Layout file without its page image' },
  layout_too_large: { status: 400, retryable: false, title: 'Layout file too large' },
  layout_unsafe_xml: { status: 400, retryable: false, title: 'Layout file declares a DTD or entities' },
  layout_invalid: { status: 400, retryable: false, title: 'Layout file is not usable PageXML or ALTO' },
  layout_size_mismatch: { status: 400, retryable: false, title: 'Layout file describes a page of another shape' },
  layout_outside_image: { status: 400, retryable: false, title: 'Layout line outside the image' },
} as const satisfies ErrorCatalog<string, number>;

export type IntakeErrorCode = keyof typeof INTAKE_ERRORS;

export class IntakeError extends CodedError<IntakeErrorCode, number> {
  readonly title: string;
  readonly detail: string;
  /** The ZIP entry path the error is about, when it is about one. */
  readonly entry: string | null;

  constructor(code: IntakeErrorCode, detail: string, options: { entry?: string; cause?: unknown; setting?: string } = {}) {
    super(code, INTAKE_ERRORS[code], detail, options);
    this.name = 'IntakeError';
    this.title = INTAKE_ERRORS[code].title;
    this.detail = detail;
    this.entry = options.entry ?? null;
  }
}

export function isIntakeError(error: unknown): error is IntakeError {
  return error instanceof IntakeError;
}

/** For the HTTP layer, which enforces MAX_UPLOAD_BYTES while the upload streams to disk. */
export function uploadTooLargeError(maxUploadBytes: number, uploadName = 'scan_zip'): IntakeError {
  return new IntakeError('upload_too_large', `${uploadName} is larger than the ${maxUploadBytes}-byte limit for an upload`, {
    setting: 'MAX_UPLOAD_BYTES',
  });
}

/** Quotes, C0 controls and DEL, bidirectional controls. */
const QUOTED_NAME_ESCAPES = new RegExp(`["\\u0000-\\u001f\\u007f${BIDI_CONTROL_CLASS}]`, 'g');

/**
 * A file or entry name as it appears in a `detail`: in double quotes, with quotes and control
 * characters escaped (backslashes stay as they are: `"C:\evil.jpg"` is what the client wrote).
 * Bidirectional controls (U+202E, right-to-left override, and its kin) are escaped as `\u202e`:
 * sent raw, they reorder the text around them where the message is shown and can disguise a
 * name's extension (`invoice\u202egpj.exe` reads as `invoiceexe.jpg`).
 */
export function quoteName(name: string): string {
  const escaped = name.replace(QUOTED_NAME_ESCAPES, (character) =>
    character === '"' || character.charCodeAt(0) < 0x80
      ? JSON.stringify(character).slice(1, -1)
      : `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `"${escaped}"`;
}
