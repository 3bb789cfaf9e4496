// The refusals of a ground-truth upload (POST /v1/models, docs/models.md) beyond the ZIP's and
// the layout files' own (intake-error.ts, the same codes as a scan's): what makes ground truth
// unfit to train on. None is retryable: the same upload is refused again.
import { CodedError, type ErrorCatalog } from '../../domain/errors.ts';

export const GROUND_TRUTH_ERRORS = {
  /** A page image without its PageXML or ALTO file: its lines' text and geometry are unknown. */
  page_without_layout: { status: 400, retryable: false, title: 'Page image without its PageXML or ALTO' },
  /** Not one line with usable text and geometry. */
  no_usable_lines: { status: 400, retryable: false, title: 'No usable line' },
  /** Fewer usable lines than a training needs (MIN_TRAINING_LINES). */
  too_few_lines: { status: 400, retryable: false, title: 'Too few lines' },
  /** So many lines carry characters no model can learn that the transcriptions look broken (an export in the wrong encoding). */
  unlearnable_characters: { status: 400, retryable: false, title: 'Characters a model cannot learn' },
} as const satisfies ErrorCatalog<string, 400>;

export type GroundTruthErrorCode = keyof typeof GROUND_TRUTH_ERRORS;

export class GroundTruthError extends CodedError<GroundTruthErrorCode, 400> {
  readonly title: string;
  constructor(code: GroundTruthErrorCode, detail: string) {
    super(code, GROUND_TRUTH_ERRORS[code], detail);
    this.name = 'GroundTruthError';
    this.title = GROUND_TRUTH_ERRORS[code].title;
  }
}
