// A page pipeline for the portal's viewer tests: no models; the real page image's size, two
// regions, a line with markup as its text, a corrected line with its recognised reading, and a
// low-confidence word.
import { createHash } from 'node:crypto';
import { imageMetadata } from '../../src/recognition/image/open-image.ts';
import type { PagePipeline } from '../../src/pipeline/pipeline.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';

export const MARKUP_LINE = '<script>alert("line")</script> & <b>bold</b>';

/**
 * `stepMs`: how long each step takes; `gate`: pages finish only once it resolves (a job that is
 * still running when a test looks, however slow the machine).
 */
export function viewerPagePipeline(options: { stepMs?: number; gate?: Promise<void> } = {}): PagePipeline {
  return {
    async processPage(task, context) {
      const image = await context.blobs.get(task.page.blobKey);
      for (const step of ['layout', 'recognition', 'correction'] as const) {
        await context.enterStep(step);
        await new Promise((resolve) => setTimeout(resolve, options.stepMs ?? 0));
      }
      await options.gate;
      const { width = 100, height = 100 } = await imageMetadata(image);
      const w = width;
      const h = height;
      const line = (id: string, top: number, text: string, extra: Partial<PageResult['regions'][number]['lines'][number]> = {}) => ({
        id,
        polygon: [
          [w * 0.1, h * top],
          [w * 0.9, h * top],
          [w * 0.9, h * (top + 0.1)],
          [w * 0.1, h * (top + 0.1)],
        ] as [number, number][],
        baseline: [
          [w * 0.1, h * (top + 0.09)],
          [w * 0.9, h * (top + 0.09)],
        ] as [number, number][],
        text,
        confidence: 0.8,
        words: text.split(' ').map((word, index) => ({
          id: `${id}w${index + 1}`,
          text: word,
          box: { x: w * 0.1, y: h * top, width: w * 0.1, height: h * 0.1 },
          confidence: 0.9,
        })),
        ...extra,
      });
      const result: PageResult = {
        schema: 'hwr.page-result/1',
        pageNumber: task.page.pageNumber,
        image: {
          name: task.page.name,
          width: w,
          height: h,
          sha256: createHash('sha256').update(image).digest('hex'),
          format: 'jpeg',
          dpi: null,
        },
        regions: [
          {
            id: 'r1',
            polygon: [
              [0, 0],
              [w, 0],
              [w, h / 2],
              [0, h / 2],
            ],
            lines: [line('r1l1', 0.1, MARKUP_LINE), line('r1l2', 0.3, 'Dear Sir,', { recognizedText: 'Dcar Sir,' })],
          },
          {
            id: 'r2',
            polygon: [
              [0, h / 2],
              [w, h / 2],
              [w, h],
              [0, h],
            ],
            lines: [
              {
                ...line('r2l1', 0.6, `page ${task.page.pageNumber} smudge`),
                words: [
                  { id: 'r2l1w1', text: 'page', box: { x: 1, y: 1, width: 1, height: 1 }, confidence: 0.95 },
                  { id: 'r2l1w2', text: String(task.page.pageNumber), box: { x: 1, y: 1, width: 1, height: 1 }, confidence: 0.9 },
                  { id: 'r2l1w3', text: 'smudge', box: { x: 1, y: 1, width: 1, height: 1 }, confidence: 0.2 },
                ],
              },
            ],
          },
        ],
        producer: { software: 'hwr-test', version: '0', models: [] },
        warnings: [],
      };
      return result;
    },
  };
}
