// One page image through image preparation, layout and (optionally) recognition,
// timed per stage. Used by the page pipeline, `hwr recognize` and the benchmarks.
import { readFileSync } from 'node:fs';
import type { PageResult } from './page/page-result.ts';
import { MODEL_PAGE_PIXELS, prepareImage } from './image/prepare-image.ts';
import type { PageTurn } from './reading/page-turn.ts';
import { regionsScaledBack, regionsTurnedBack } from './engine/turned-page.ts';
import type { OcrEngine, PieceReading } from './engine/ocr-engine.ts';
import type { DetectedBox } from './layout/text-detector.ts';
import type { LayoutRegion } from './layout/reading-order.ts';
import { assembleRegions, assembleUploadedRegions, type LineFramesById } from './engine/page-assembly.ts';
import { layoutRegionsOf, type UploadedLayout } from './layout/uploaded-layout.ts';
import { readUploadedLayout } from './layout/uploaded-layout-thread.ts';

export interface StageTimings {
  /** Reading and decoding the image (sharp). */
  decodeMs: number;
  /** Text detection, line grouping, reading order. */
  detectionMs: number;
  /** Line crops, recognition, decoding, word boxes (0 when recognition did not run). */
  recognitionMs: number;
}

export interface PageRecognition {
  page: PageResult;
  timings: StageTimings;
  /** Where the lines came from: the page's own layout file, the line segmenter or the text detector. */
  layoutBy: 'uploaded' | 'segmenter' | 'detector';
  /** How many layout lines kept each recognizer's reading (all 0 for layout only). */
  linesReadBy: Record<PieceReading['recognizer'], number>;
  /**
   * The recognizer's output frames of each line by line id, for the correction guard
   * (correction/line-evidence.ts); held for this page only. Lines read by a recognizer of
   * thousands of classes (print screening) or in several pieces have none.
   */
  lineFrames: LineFramesById;
}

export interface RecognizePageOptions {
  /** The name reported in the page result (path inside the ZIP, or file name). */
  name: string;
  pageNumber: number;
  maxPixels: number;
  /** false: layout only (lines with geometry and empty text). */
  recognize: boolean;
  signal?: AbortSignal;
  /**
   * The page's own layout (PageXML or ALTO bytes, uploaded-layout.ts): its regions, lines and
   * reading order replace detection. A LayoutError when the file is unusable for this image.
   */
  layoutXml?: Uint8Array;
  /** The same, already read (evaluation on ground-truth lines). */
  layout?: UploadedLayout;
  /** Called (and awaited) as the page enters each step. */
  enterStep?: (step: 'layout' | 'recognition') => Promise<void>;
}

/**
 * The most pixels a page is decoded at for recognizePage (the pixel budget counts the same,
 * page-pixels.ts): MODEL_PAGE_PIXELS, or the page as it is when its own layout came with it.
 */
export function decodedPixels(options: Pick<RecognizePageOptions, 'layout' | 'layoutXml'>): number | undefined {
  return options.layout || options.layoutXml ? undefined : MODEL_PAGE_PIXELS;
}

const SOFTWARE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export async function recognizePage(engine: OcrEngine, bytes: Buffer, options: RecognizePageOptions): Promise<PageRecognition> {
  const { signal } = options;
  signal?.throwIfAborted();
  await options.enterStep?.('layout');
  // The models this page will use load while its image is decoded (the others when first run).
  engine.warm({ layout: !options.layout && !options.layoutXml, read: options.recognize });
  let start = performance.now();
  // No binding keeps the page as decoded once a turned copy replaces it: a page read turned holds
  // one raster while it is read, as the pixel budget counts it (pixel-budget.ts). A large page is
  // decoded reduced to what the models need (MODEL_PAGE_PIXELS, ADR 0040) unless its own layout
  // came with it (whose coordinates are the page's); the result's coordinates are the page's.
  const reducedTo = decodedPixels(options);
  let { raster, scale, ...decoded } = await prepareImage(bytes, {
    name: options.name,
    maxPixels: options.maxPixels,
    signal,
    ...(reducedTo === undefined ? {} : { decodedPixels: reducedTo }),
  });
  const decodeMs = performance.now() - start;
  signal?.throwIfAborted();

  start = performance.now();
  const uploaded: UploadedLayout | null =
    options.layout ?? (options.layoutXml ? await readUploadedLayout(options.layoutXml, raster, signal) : null);
  let layout: readonly LayoutRegion[] = uploaded ? layoutRegionsOf(uploaded) : await engine.layout(raster);
  // A page scanned upside down or sideways is laid out and read turned upright (recognition/page-turn.ts).
  let turn: PageTurn = 0;
  if (!uploaded) ({ turn, image: raster, regions: layout } = await engine.upright(raster, layout, options.recognize));
  let detectionMs = performance.now() - start;
  signal?.throwIfAborted();

  let recognitionMs = 0;
  let readings: Map<DetectedBox, PieceReading> | null = null;
  if (options.recognize) {
    await options.enterStep?.('recognition');
    start = performance.now();
    // Reading may lay a printed page out again (OcrEngine.read): the lines read are the ones kept.
    ({ regions: layout, readings } = await engine.read(raster, layout));
    recognitionMs = performance.now() - start;
    signal?.throwIfAborted();
  }
  start = performance.now();
  const lineFrames: LineFramesById = new Map();
  const assembled = uploaded
    ? await assembleUploadedRegions(raster, uploaded, layout, readings, lineFrames)
    : await assembleRegions(raster, layout, readings, lineFrames);
  const upright = turn === 0 ? assembled : regionsTurnedBack(assembled, turn, raster.width, raster.height);
  const regions = scale.x === 1 && scale.y === 1 ? upright : regionsScaledBack(upright, scale);
  // Baselines count as layout, word boxes as recognition: one pass does both, so the
  // pass is booked to the last stage that ran.
  if (readings) recognitionMs += performance.now() - start;
  else detectionMs += performance.now() - start;

  const layoutBy = uploaded ? 'uploaded' : engine.laidOutBy(layout);
  const linesReadBy = { main: 0, screening: 0, print: 0 };
  for (const line of layout.flatMap((region) => region.lines)) {
    const reading = readings?.get(line.fragments[0]);
    if (reading) linesReadBy[reading.recognizer] += 1;
  }
  const page: PageResult = {
    schema: 'hwr.page-result/1',
    pageNumber: options.pageNumber,
    image: decoded.source,
    regions,
    producer: {
      software: 'hwr',
      version: SOFTWARE_VERSION,
      models: engine.modelsUsed(uploaded ? 'uploaded' : engine.layoutModels(layout), options.recognize, {
        printReader: linesReadBy.print > 0,
      }),
    },
    ...(turn === 0 ? {} : { orientation: turn }),
    warnings: [...decoded.warnings, ...(uploaded?.warnings ?? [])],
    ...(uploaded ? { layoutSource: 'uploaded' as const } : {}),
  };
  return { page, timings: { decodeMs, detectionMs, recognitionMs }, layoutBy, linesReadBy, lineFrames };
}
