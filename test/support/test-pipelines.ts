// Small pipelines for engine tests: real blob I/O and real timing, no models.
import { createHash } from 'node:crypto';
import type { ExportPipeline, PagePipeline, PageTask } from '../../src/pipeline/pipeline.ts';
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
  /** Record this correction usage on every page. */
  correction?: PageResult['correction'];
}): PagePipeline {
  const attempts = new Map<string, number>();
  return {
    async processPage(task, context) {
      options.onPageStart?.(task);
      const key = `${task.jobId}:${task.page.pageNumber}`;
      attempts.set(key, (attempts.get(key) ?? 0) + 1);
      const image = await context.blobs.get(task.page.blobKey);
      for (const step of ['layout', 'recognition', 'correction'] as const) {
        await context.enterStep(step);
        await sleep(options.stepMs ?? 0, context.signal);
      }
      if (options.failPages?.includes(task.page.pageNumber)) throw new Error('the test pipeline cannot read this page');
      if (options.flakyPages?.includes(task.page.pageNumber) && attempts.get(key) === 1) throw new Error('transient failure');
      options.processed?.push({ worker: options.worker, jobId: task.jobId, page: task.page.pageNumber });
      const result = tinyPageResult(task, image);
      return options.correction ? { ...result, correction: options.correction } : result;
    },
  };
}

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

/** The one-line result a test page pipeline produces for `task` (its text: `page N`). */
export function tinyPageResult(task: Pick<PageTask, 'page'>, image: Buffer): PageResult {
  const box = { x: 10, y: 10, width: 100, height: 20 };
  return {
    schema: 'hwr.page-result/1',
    pageNumber: task.page.pageNumber,
    image: {
      name: task.page.name,
      width: 200,
      height: 100,
      sha256: createHash('sha256').update(image).digest('hex'),
      format: 'png',
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
