// Test support: stores real page images and PageResults in a blob store the way the engine
// does, and builds the ExportTask for them.
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BlobStore } from '../../src/blobs/blob-store.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import type { ExportTask, JobOptions } from '../../src/pipeline/pipeline.ts';
import { pageResultFromGroundTruth } from './page-result-from-ground-truth.ts';

export const EXPORT_FIXTURES = path.resolve(import.meta.dirname, '../fixtures/export');

/** The copied ground-truth pages (see test/fixtures/README.md). */
export const FIXTURE_PAGES = [
  { image: 'ocrd_kant_aufklaerung_1784_0017.tif', xml: 'ocrd_kant_aufklaerung_1784_0017.xml' },
  { image: 'cremma19_zola_f207.jpg', xml: 'cremma19_zola_f207.xml' },
  { image: 'fondue_en_print_dracula_page_51.png', xml: 'fondue_en_print_dracula_page_51.xml' },
] as const;

export const DEFAULT_JOB_OPTIONS: JobOptions = {
  llmTier: 'balanced',
  preset: 'generic',
  pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
  pdfFormat: 'pdfa-2b',
  webhookUrl: null,
};

export interface StagedPage {
  /** Name inside the submitted ZIP. */
  name: string;
  image: Buffer;
  result: PageResult;
}

/** PageResults from the fixtures' ground truth, with names as a client's ZIP might have them. */
export async function fixturePages(
  dir = EXPORT_FIXTURES,
  pages: ReadonlyArray<{ image: string; xml: string }> = FIXTURE_PAGES,
): Promise<StagedPage[]> {
  return Promise.all(
    pages.map(async (page, index) => {
      const name = `scans/${page.image}`;
      const result = await pageResultFromGroundTruth({
        imagePath: path.join(dir, page.image),
        xmlPath: path.join(dir, page.xml),
        name,
        pageNumber: index + 1,
      });
      return { name, image: await readFile(path.join(dir, page.image)), result };
    }),
  );
}

/** Stores images and results like the engine does and returns the export task. */
export async function stageExportJob(
  blobs: BlobStore,
  pages: StagedPage[],
  options: Partial<JobOptions> = {},
  jobId: string = randomUUID(),
): Promise<ExportTask> {
  const staged = [];
  for (const [index, page] of pages.entries()) {
    const pageNumber = index + 1;
    const blobKey = `jobs/${jobId}/pages/${pageNumber}/source`;
    const resultKey = `jobs/${jobId}/pages/${pageNumber}/result.json`;
    await blobs.put(blobKey, page.image);
    await blobs.put(resultKey, JSON.stringify({ ...page.result, pageNumber, image: { ...page.result.image, name: page.name } }));
    staged.push({
      source: {
        pageNumber,
        name: page.name,
        blobKey,
        sha256: createHash('sha256').update(page.image).digest('hex'),
        bytes: page.image.length,
      },
      resultKey,
    });
  }
  return {
    jobId,
    accountId: 'account-test',
    createdAt: '2025-03-14T09:26:53.589Z',
    options: { ...DEFAULT_JOB_OPTIONS, ...options },
    pages: staged,
    archiveKey: `jobs/${jobId}/result.zip`,
  };
}
