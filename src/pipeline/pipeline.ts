// The interface between the job engine (src/workers) and the processing steps.
// The engine owns events, retries, cancellation and storage of page results;
// a pipeline only turns inputs into outputs.
import type { Logger } from 'pino';
import type { JobOptions, PageSource, PageStep } from '../../domain/events.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { PageResult } from '../recognition/page/page-result.ts';

// The job options and page sources travel in the JobQueued event: the domain owns them.
export { LLM_TIERS, PDF_FORMATS, PIPELINE_STEPS } from '../../domain/events.ts';
export type { JobOptions, LlmTier, PageSource, PageStep, PdfFormat, PipelineStep } from '../../domain/events.ts';

export interface PageTask {
  jobId: string;
  accountId: string;
  pageCount: number;
  page: PageSource;
  options: JobOptions;
}

export interface PageContext {
  blobs: BlobStore;
  /** Aborted when the job is cancelled or the worker shuts down; check between steps. */
  signal: AbortSignal;
  /** Records that this page entered a step (an event; drives `current_step`). */
  enterStep(step: PageStep): Promise<void>;
  log: Logger;
  /**
   * When the page must be done by (epoch ms): its task's expiry, less the time to store the
   * result. Correction gives up past it and the page keeps its recognised text. Absent: no limit.
   */
  deadline?: number;
}

export interface PagePipeline {
  processPage(task: PageTask, context: PageContext): Promise<PageResult>;
}

export interface ExportTask {
  jobId: string;
  accountId: string;
  createdAt: string;
  options: JobOptions;
  pages: Array<{ source: PageSource; resultKey: string }>;
  /** Where the archive must be written. */
  archiveKey: string;
}

export interface ExportContext {
  blobs: BlobStore;
  signal: AbortSignal;
  log: Logger;
}

export interface ExportOutcome {
  archiveKey: string;
  bytes: number;
  sha256: string;
}

export interface ExportPipeline {
  exportJob(task: ExportTask, context: ExportContext): Promise<ExportOutcome>;
}

/**
 * The correction step (src/pipeline/correction/). Returns the page with corrected
 * line/word texts (geometry unchanged), `correction` usage filled in, and any
 * warning (e.g. provider down, no provider configured) appended to `warnings`.
 * Never throws for provider trouble: an LLM outage must not fail a job.
 */
export interface PageCorrector {
  correct(page: PageResult, input: CorrectionInput): Promise<PageResult>;
}

export interface CorrectionInput {
  options: JobOptions;
  /** The page image (the `best` tier may send it to the model). */
  imageBlobKey: string;
  blobs: BlobStore;
  signal: AbortSignal;
  log: Logger;
  /** No provider call starts, and no retry waits, past this (epoch ms; PageContext.deadline). */
  deadline?: number;
  /**
   * Runs the page image's decode for the `best` tier under the process's pixel budget (the page
   * pipeline's), as the recognition's decode was: a JPEG 2000 page is a whole decode again.
   */
  admitDecode?: <T>(decode: () => Promise<T>) => Promise<T>;
}
