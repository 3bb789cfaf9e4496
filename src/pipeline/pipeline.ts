// The interface between the job engine (src/workers) and the processing steps.
// The engine owns events, retries, cancellation and storage of page results;
// a pipeline only turns inputs into outputs.
import type { Logger } from 'pino';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { PageResult } from './page-result.ts';

export const PAGE_STEPS = ['layout', 'recognition', 'correction'] as const;
export const PIPELINE_STEPS = ['layout', 'recognition', 'correction', 'export'] as const;
export type PageStep = (typeof PAGE_STEPS)[number];
export type PipelineStep = (typeof PIPELINE_STEPS)[number];

export const LLM_TIERS = ['cheap', 'balanced', 'best'] as const;
export type LlmTier = (typeof LLM_TIERS)[number];

export const PDF_FORMATS = ['pdfa-2b', 'pdf', 'none'] as const;
export type PdfFormat = (typeof PDF_FORMATS)[number];

export interface JobOptions {
  llmTier: LlmTier;
  /** Document type for correction (see src/pipeline/correction presets). */
  preset: string;
  /** Steps to run, always a prefix of PIPELINE_STEPS ending with 'export'. */
  pipelineSteps: PipelineStep[];
  pdfFormat: PdfFormat;
  webhookUrl: string | null;
}

export interface PageSource {
  /** 1-based page number (natural sort order of ZIP entry paths). */
  pageNumber: number;
  /** Entry path inside the submitted ZIP. */
  name: string;
  /** Where intake stored the page image. */
  blobKey: string;
  sha256: string;
  bytes: number;
  /**
   * Where intake stored the page's own layout (a PageXML or ALTO file of the same stem in the
   * ZIP), checked against the image; absent (all events before it): the layout is detected.
   */
  layoutBlobKey?: string;
}

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
}
