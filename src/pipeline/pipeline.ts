// The interface between the job engine (src/workers) and the processing steps.
// The engine owns events, retries, cancellation and storage of page results;
// a pipeline only turns inputs into outputs.
import type { Logger } from 'pino';
import type { JobOptions, PageSource, PageStep } from '../../domain/events.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { PageResult } from '../recognition/page/page-result.ts';

// The correction step the page pipeline runs is the library's (src/recognition/correction/).
export type { CorrectionInput, PageCorrector } from '../recognition/correction/corrector.ts';

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
  /** Releases what the pipeline loaded for itself (the engines of trained models). */
  close?(): Promise<void>;
}

export interface ExportTask {
  jobId: string;
  accountId: string;
  createdAt: string;
  options: JobOptions;
  pages: Array<{ source: PageSource; resultKey: string }>;
  /** Where the archive must be written. */
  archiveKey: string;
  /**
   * People's corrections (docs/corrections.md): by page, line id → text, the job's correction
   * count they are as of (`version`). Absent: the first export, the machine's reading alone.
   */
  corrections?: { version: number; lines: Readonly<Record<number, Readonly<Record<string, string>>>> };
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
  /** Lines whose text is a person's correction (the manifest's `corrections.corrected_lines`). */
  correctedLines?: number;
}

export interface ExportPipeline {
  exportJob(task: ExportTask, context: ExportContext): Promise<ExportOutcome>;
}
