// The engine's page task: image preparation -> layout -> recognition -> correction,
// as far as the job's pipeline_steps go. Models are loaded once per process, on the
// first page (shared-engine.ts).
import type { Config } from '../platform/config.ts';
import type { PageContext, PagePipeline, PageCorrector, PageTask } from './pipeline.ts';
import { storedPageImage } from './stored-page-image.ts';
import type { PageResult } from '../recognition/page/page-result.ts';
import { decodedPixels, recognizePage, type StageTimings } from '../recognition/recognize-page.ts';
import { sharedEngine } from './shared-engine.ts';
import { TrainedEngines } from './trained-engines.ts';
import type { OcrEngine } from '../recognition/engine/ocr-engine.ts';
import path from 'node:path';
import { pagePixels } from '../recognition/engine/page-pixels.ts';
import { PixelBudget } from '../recognition/engine/pixel-budget.ts';

export interface PagePipelineOptions {
  config: Pick<Config, 'recognition' | 'limits' | 'dataDir'>;
  /** Runs when the job's steps include 'correction'; without one, the step adds a warning. */
  corrector?: PageCorrector;
}

export function createPagePipeline(options: PagePipelineOptions): PagePipeline {
  const { config, corrector } = options;
  const pixels = new PixelBudget(config.limits.maxPixelsInFlight);
  const trainedEngines = new TrainedEngines({
    cacheDir: path.join(config.dataDir, TRAINED_MODELS_CACHE),
    memoryMb: config.recognition.trainedModelsMemoryMb,
  });
  return {
    close: () => trainedEngines.close(),
    async processPage(task: PageTask, context: PageContext): Promise<PageResult> {
      const steps = task.options.pipelineSteps;
      const { signal } = context;
      const shared = await sharedEngine(config.recognition);
      // A job that names an account's trained model reads with it (docs/models.md); the rest of the setup is shared.
      const withEngine = <T>(read: (engine: OcrEngine) => Promise<T>): Promise<T> =>
        task.options.model === undefined ? read(shared) : trainedEngines.withEngine(task.options.model, shared, context.blobs, read);
      const bytes = await context.blobs.get(task.page.blobKey);
      // The page's own layout from the ZIP (checked at intake); events before it have none.
      const layoutXml = task.page.layoutBlobKey ? await context.blobs.get(task.page.layoutBlobKey) : undefined;
      const weight = await pagePixels(bytes, decodedPixels(layoutXml ? { layoutXml } : {}));
      const { page, timings, lineFrames } = await pixels.run(
        weight,
        () =>
          withEngine((engine) =>
            recognizePage(engine, bytes, {
              name: task.page.name,
              pageNumber: task.page.pageNumber,
              maxPixels: config.limits.maxImagePixels,
              recognize: steps.includes('recognition'),
              ...(layoutXml ? { layoutXml } : {}),
              signal,
              enterStep: (step) => context.enterStep(step),
            }),
          ),
        signal,
      );
      context.log.debug(
        { page: task.page.pageNumber, lines: page.regions.reduce((sum, region) => sum + region.lines.length, 0), ...roundTimings(timings) },
        'page recognised',
      );
      if (!steps.includes('correction')) return page;
      signal.throwIfAborted();
      await context.enterStep('correction');
      if (!corrector) return { ...page, warnings: [...page.warnings, 'correction skipped: no corrector configured'] };
      const corrected = await corrector.correct(page, {
        options: task.options,
        pageImage: storedPageImage(context.blobs, task.page.blobKey),
        signal,
        log: context.log,
        ...(context.deadline === undefined ? {} : { deadline: context.deadline }),
        admitDecode: (decode) => pixels.run(weight, decode, signal),
        lineFrames,
      });
      signal.throwIfAborted();
      return corrected;
    },
  };
}

/** Where a worker keeps its copies of trained models, under DATA_DIR. */
export const TRAINED_MODELS_CACHE = 'trained-models';

function roundTimings(timings: StageTimings): Record<string, number> {
  return Object.fromEntries(Object.entries(timings).map(([key, value]) => [key, Math.round(value)]));
}
