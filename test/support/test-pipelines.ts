// Stand-in pipelines for the engine and scheduling tests (test/README.md, "Stand-ins"): what they
// test is the job engine around a page (tasks, steps, retries, outages, shutdowns, fairness), not
// recognition, so no model runs. Everything else is real: each page reads its stored image from
// the blob store and decodes its header (a page that is not a real image fails, as it would in the
// real pipeline), enters its steps through the engine, takes real time, and stores a one-line
// result; the export reads every page result and writes a small JSON archive.
// A test that says it runs a real job uses src/pipeline/default-pipelines.ts instead.
import { createHash } from 'node:crypto';
import type { ExportPipeline, PagePipeline, PageStep, PageTask } from '../../src/pipeline/pipeline.ts';
import { imageMetadata } from '../../src/recognition/image/open-image.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';

export interface PageLog {
  worker: string;
  jobId: string;
  page: number;
}

export function testPagePipeline(options: {
  worker: string;
  stepMs?: number;
  failPages?: number[];
  /** Pages that fail only on their first attempt. */
  flakyPages?: number[];
  processed?: PageLog[];
  onPageStart?: (task: PageTask) => void;
  /**
   * Called before the page reads its image (`read`) and before it enters each step; what it
   * returns is awaited, so a test can hold a page there (in flight, unfinished) until it lets go.
   */
  pause?: (task: PageTask, at: PagePoint) => Promise<void> | void;
  /** A read or a step that threw (refused while the database or the store was away, say). */
  onError?: (task: PageTask, at: PagePoint, error: unknown) => void;
  /** Record this correction usage on every page. */
  correction?: PageResult['correction'];
}): PagePipeline {
  const attempts = new Map<string, number>();
  return {
    async processPage(task, context) {
      options.onPageStart?.(task);
      const key = `${task.jobId}:${task.page.pageNumber}`;
      attempts.set(key, (attempts.get(key) ?? 0) + 1);
      /** Runs `work` at `at`, after the test's pause there, telling the test when it throws. */
      const at = async <T>(point: PagePoint, work: () => Promise<T>): Promise<T> => {
        await options.pause?.(task, point);
        try {
          return await work();
        } catch (error) {
          options.onError?.(task, point, error);
          throw error;
        }
      };
      const image = await at('read', () => context.blobs.get(task.page.blobKey));
      const { width, height, format } = await imageMetadata(image);
      for (const step of ['layout', 'recognition', 'correction'] as const) {
        await at(step, () => context.enterStep(step));
        await sleep(options.stepMs ?? 0, context.signal);
      }
      if (options.failPages?.includes(task.page.pageNumber)) throw new Error('the test pipeline cannot read this page');
      if (options.flakyPages?.includes(task.page.pageNumber) && attempts.get(key) === 1) throw new Error('transient failure');
      options.processed?.push({ worker: options.worker, jobId: task.jobId, page: task.page.pageNumber });
      const result = tinyPageResult(task, image, { width: width ?? 0, height: height ?? 0, format: format ?? 'png' });
      return options.correction ? { ...result, correction: options.correction } : result;
    },
  };
}

/** Where a page of the test pipeline may be held: before reading its image, and before each step. */
export type PagePoint = 'read' | PageStep;

export function testExportPipeline(): ExportPipeline {
  return {
    async exportJob(task, context) {
      const pages = [];
      for (const page of task.pages) pages.push(JSON.parse((await context.blobs.get(page.resultKey)).toString()) as PageResult);
      const body = Buffer.from(JSON.stringify({ jobId: task.jobId, pages: pages.map((page) => page.regions[0].lines[0].text) }));
      const info = await context.blobs.put(task.archiveKey, body);
      return { archiveKey: task.archiveKey, bytes: info.bytes, sha256: createHash('sha256').update(body).digest('hex') };
    },
  };
}

/**
 * The one-line result a test page pipeline produces for `task` (its text: `page N`), of `image`
 * with its decoded `size` (the test pipeline's) or a default one (a test that stores a result itself).
 */
export function tinyPageResult(
  task: Pick<PageTask, 'page'>,
  image: Buffer,
  size: { width: number; height: number; format: string } = { width: 200, height: 100, format: 'png' },
): PageResult {
  const box = { x: 10, y: 10, width: 100, height: 20 };
  return {
    schema: 'hwr.page-result/1',
    pageNumber: task.page.pageNumber,
    image: {
      name: task.page.name,
      width: size.width,
      height: size.height,
      sha256: createHash('sha256').update(image).digest('hex'),
      format: size.format,
      dpi: null,
    },
    regions: [
      {
        id: 'r1',
        polygon: [
          [0, 0],
          [200, 0],
          [200, 100],
          [0, 100],
        ],
        lines: [
          {
            id: 'r1l1',
            polygon: [
              [10, 10],
              [110, 10],
              [110, 30],
              [10, 30],
            ],
            baseline: [
              [10, 28],
              [110, 28],
            ],
            text: `page ${task.page.pageNumber}`,
            confidence: 0.9,
            words: [{ id: 'r1l1w1', text: `page ${task.page.pageNumber}`, box, confidence: 0.9 }],
          },
        ],
      },
    ],
    producer: { software: 'hwr-test', version: '0', models: [] },
    warnings: [],
  };
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
