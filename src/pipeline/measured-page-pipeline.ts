// Counts pages and times their steps around any page pipeline (runtime.ts wraps the one it runs).
import type { PagePipeline } from './pipeline.ts';
import { isOutage } from '../outage/outage.ts';
import { pageStepDuration, pagesFailed, pagesProcessed } from '../metrics/metrics.ts';

export function measuredPagePipeline(pipeline: PagePipeline): PagePipeline {
  return {
    async processPage(task, context) {
      let step: string | null = null;
      let stepStarted = 0;
      const endStep = () => {
        if (step !== null) pageStepDuration.observe({ step }, (performance.now() - stepStarted) / 1000);
        step = null;
      };
      const measured = {
        ...context,
        enterStep: async (next: Parameters<typeof context.enterStep>[0]) => {
          endStep();
          step = next;
          stepStarted = performance.now();
          await context.enterStep(next);
        },
      };
      try {
        const result = await pipeline.processPage(task, measured);
        endStep();
        pagesProcessed.inc();
        return result;
      } catch (error) {
        // A cancelled job, a task handed back at shutdown, or the database or the blob store going
        // away (the task waits for it and runs again: docs/reliability.md) is not a failure of the page.
        if (!context.signal.aborted && !isOutage(error)) {
          endStep();
          pagesFailed.inc();
        }
        throw error;
      }
    },
  };
}
