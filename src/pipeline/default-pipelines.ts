// The real processing steps the service runs: recognition (+ correction) per page,
// PageXML/ALTO/PDF export per job. Loaded only by worker processes.
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { ExportPipeline, PagePipeline } from './pipeline.ts';

export async function defaultPipelines(
  config: Config,
  log: Logger,
): Promise<{ page: PagePipeline; export: ExportPipeline; close(): Promise<void> }> {
  const { createPagePipeline } = await import('./page-pipeline.ts');
  const { closeSharedEngines } = await import('./shared-engine.ts');
  const { createCorrector } = await import('../recognition/correction/create-corrector.ts');
  const { createExportPipeline } = await import('./export-pipeline.ts');
  const { configuredModelSpec, modelSetupNotice } = await import('../recognition/models/default-model.ts');
  // The models are loaded at the first page; their setup is read now, so that a broken one fails
  // the worker's start (model_invalid) rather than the first job, and the log says which it is.
  const notice = modelSetupNotice(configuredModelSpec(config.recognition.modelDir));
  log[notice.level](notice.message);
  const corrector = createCorrector(config.correction);
  log.debug('pipelines loaded');
  const page = createPagePipeline({ config, corrector });
  const close = async () => {
    // The trained models' engines share the shared engines' sessions: they go first.
    await page.close?.();
    await closeSharedEngines();
  };
  return { page, export: createExportPipeline(), close };
}
