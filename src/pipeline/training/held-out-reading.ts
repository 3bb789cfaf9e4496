// The figures a trained model is offered with (docs/models.md): the held-out lines of its ground
// truth read through the page pipeline's own recognition (recognizePage with the lines as the
// page's layout: the crops, the batching, the beam search with the language model of a job) by an
// engine, each line scored against its text.
import type { BlobStore } from '../../blobs/blob-store.ts';
import type { OcrEngine } from '../../recognition/engine/ocr-engine.ts';
import { allLines } from '../../recognition/page/page-result.ts';
import { recognizePage } from '../../recognition/recognize-page.ts';
import { type LineScores, scoreEachLine } from '../../recognition/training/error-rates.ts';
import type { HeldOutPage } from './training-lines.ts';

export async function readHeldOut(
  engine: OcrEngine,
  blobs: BlobStore,
  pages: readonly HeldOutPage[],
  options: { maxPixels: number; signal: AbortSignal },
): Promise<LineScores[]> {
  const pairs: { read: string; truth: string }[] = [];
  for (const page of pages) {
    const lines = page.lines.map((line) => ({ ...line }));
    const { page: result } = await recognizePage(engine, await blobs.get(page.imageKey), {
      name: page.name,
      pageNumber: page.pageNumber,
      maxPixels: options.maxPixels,
      recognize: true,
      signal: options.signal,
      layout: { format: 'page-2019', regions: [{ id: 'held-out', type: null, polygon: [], lines }], warnings: [], leftOut: [] },
    });
    const read = new Map(allLines(result).map((line) => [line.id, line.text]));
    for (const line of page.lines) pairs.push({ read: read.get(line.id) ?? '', truth: line.text });
  }
  return scoreEachLine(pairs);
}
