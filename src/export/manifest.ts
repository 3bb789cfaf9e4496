// manifest.json of the result archive: what was exported, from what, by which software and
// models, and every file with its size and sha256 (all files but the manifest itself).
import type { JobOptions, PdfFormat } from '../../domain/events.ts';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import type { ModelInfo, PageResult } from '../recognition/page/page-result.ts';
import type { PageTurn } from '../recognition/reading/page-turn.ts';

export const MANIFEST_SCHEMA = 'hwr.result-archive/1';

export interface ManifestFile {
  path: string;
  bytes: number;
  sha256: string;
  media_type: string;
}

export interface ManifestPage {
  page_number: number;
  source: { name: string; sha256: string; bytes: number };
  image: { width: number; height: number; format: string; dpi: number | null };
  files: { page: string; alto: string; text: string };
  regions: number;
  lines: number;
  words: number;
  /** Lines a person corrected (docs/corrections.md); 0 in the first export. */
  corrected_lines: number;
  /** 'uploaded': the page's regions and lines came from its PageXML/ALTO in the ZIP; 'detected': from our layout. */
  layout_source: 'detected' | 'uploaded';
  /** The clockwise turn that makes the page upright: 0, or 90, 180, 270 for a page scanned sideways or upside down and read turned. */
  orientation: PageTurn;
  warnings: string[];
}

export interface Manifest {
  schema: typeof MANIFEST_SCHEMA;
  job_id: string;
  /** The archive's one timestamp: the job's creation time (see docs/result-archive.md). */
  created_at: string;
  /** `model`: `default`, or the id of the account's trained model the pages were read with (docs/models.md). */
  options: { llm_tier: string; preset: string; pipeline_steps: string[]; pdf_format: PdfFormat; model: string };
  software: { name: string; version: string };
  models: Array<{ role: ModelInfo['role']; name: string; version: string }>;
  correction: Array<{ provider: string; model: string }>;
  page_count: number;
  /**
   * Which corrections the archive holds: `version` is the job's count of saved corrections it
   * was built with (0: the machine's reading, the first export), `corrected_lines` the lines that
   * differ from the machine's reading, over all pages.
   */
  corrections: { version: number; corrected_lines: number };
  pages: ManifestPage[];
  pdf: { path: string; format: Exclude<PdfFormat, 'none'>; pages: number } | null;
  /** The job-level text file (every page's text in order) and TEI P5 file; null in archives before them. */
  text: { path: string } | null;
  tei: { path: string } | null;
  files: ManifestFile[];
}

export class ManifestBuilder {
  private readonly pages: ManifestPage[] = [];
  private readonly files: ManifestFile[] = [];
  private readonly models = new Map<string, Manifest['models'][number]>();
  private readonly corrections = new Map<string, Manifest['correction'][number]>();
  private software: Manifest['software'] | null = null;
  private pdf: Manifest['pdf'] = null;
  private jobFiles: { text: string; tei: string } | null = null;

  addPage(page: ManifestPage, result: PageResult): void {
    this.pages.push(page);
    this.software ??= { name: result.producer.software, version: result.producer.version };
    for (const model of result.producer.models) {
      this.models.set(`${model.role}\u0000${model.name}\u0000${model.version}`, {
        role: model.role,
        name: model.name,
        version: model.version,
      });
    }
    if (result.correction) {
      const { provider, model } = result.correction;
      this.corrections.set(`${provider}\u0000${model}`, { provider, model });
    }
  }

  addFile(file: ManifestFile): void {
    this.files.push(file);
  }

  setPdf(pdf: NonNullable<Manifest['pdf']>): void {
    this.pdf = pdf;
  }

  setJobFiles(paths: { text: string; tei: string }): void {
    this.jobFiles = paths;
  }

  build(job: {
    jobId: string;
    createdAt: Date;
    options: JobOptions;
    correctionVersion: number;
    fallbackSoftware: Manifest['software'];
  }): Manifest {
    return {
      schema: MANIFEST_SCHEMA,
      job_id: job.jobId,
      created_at: job.createdAt.toISOString(),
      options: {
        llm_tier: job.options.llmTier,
        preset: job.options.preset,
        pipeline_steps: [...job.options.pipelineSteps],
        pdf_format: job.options.pdfFormat,
        model: job.options.model ?? DEFAULT_MODEL,
      },
      software: this.software ?? job.fallbackSoftware,
      models: [...this.models.values()],
      correction: [...this.corrections.values()],
      page_count: this.pages.length,
      corrections: {
        version: job.correctionVersion,
        corrected_lines: this.pages.reduce((sum, page) => sum + page.corrected_lines, 0),
      },
      pages: this.pages,
      pdf: this.pdf,
      text: this.jobFiles && { path: this.jobFiles.text },
      tei: this.jobFiles && { path: this.jobFiles.tei },
      files: this.files,
    };
  }
}
