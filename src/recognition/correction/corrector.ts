// The correction step's interface: what the page pipeline (src/pipeline/page-pipeline.ts) calls
// after recognition, and what createCorrector returns.
import type { Logger } from 'pino';
import type { JobOptions } from '../../../domain/events.ts';
import type { PageResult } from '../page/page-result.ts';
import type { LineFrames } from '../decoding/ctc-score.ts';

/**
 * Returns the page with corrected line/word texts (geometry unchanged), `correction` usage
 * filled in, and any warning (e.g. provider down, no provider configured) appended to
 * `warnings`. Never throws for provider trouble: an LLM outage must not fail a job.
 */
export interface PageCorrector {
  correct(page: PageResult, input: CorrectionInput): Promise<PageResult>;
}

export interface CorrectionInput {
  options: JobOptions;
  /** The page image (the `best` tier may send it to the model). */
  pageImage: PageImageSource;
  signal: AbortSignal;
  log: Logger;
  /** No provider call starts, and no retry waits, past this (epoch ms; PageContext.deadline). */
  deadline?: number;
  /**
   * Runs the page image's decode for the `best` tier under the process's pixel budget (the page
   * pipeline's), as the recognition's decode was: a JPEG 2000 page is a whole decode again.
   */
  admitDecode?: <T>(decode: () => Promise<T>) => Promise<T>;
  /**
   * The recognizer's output frames of the page's lines by line id (recognize-page.ts), which the
   * evidence guard scores corrections against; held for this page only. A line without frames
   * (or a page corrected from a stored result) is judged by the edit ratio.
   */
  lineFrames?: ReadonlyMap<string, LineFrames>;
}

/**
 * Where the page image comes from; read only when the tier sends the image. The service's is the
 * blob store (src/pipeline/stored-page-image.ts).
 */
export interface PageImageSource {
  /** Names the image in the log (the blob key). */
  key: string;
  /** The image as stored (any format the recognition opens). */
  read(): Promise<Buffer>;
  /**
   * Whether an error reading or decoding the image is the task's to ride out: it propagates
   * unchanged (the task runs again) instead of the page being corrected from its text alone.
   * The blob store being away is; an image missing or unreadable is not.
   */
  ridesOut(error: unknown): boolean;
}
