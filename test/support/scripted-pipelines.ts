// Scripted pipelines for the HTTP API, portal and client tests (test/README.md, "Stand-ins"):
// steered by the ZIP entry names a test uploads, so that a test can have a job fail, stay
// running or be decoded on cue: a page named `fail-*` fails for good, a page named `hold-*`
// stays in processing, in its first step, until the test releases its job (or the job is
// cancelled), a page named `decode-*` is decoded by the real image preparation (and fails as it
// does when its pixels are cut off). Every other page, and the export, runs through `base`: by
// default the stand-in pipelines of test-pipelines.ts (no model: what these tests check is the
// service around the pages); a test that says it runs a real job passes the real pipelines
// (src/pipeline/default-pipelines.ts), and its held pages are then recognised for real too.
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import type { ExportPipeline, PagePipeline } from '../../src/pipeline/pipeline.ts';
import { testExportPipeline, testPagePipeline } from './test-pipelines.ts';

export interface ScriptedPipelines {
  page: PagePipeline;
  export: ExportPipeline;
  /** Lets every held page of the job finish. */
  release(jobId: string): void;
}

export function scriptedPipelines(
  base: { page: PagePipeline; export: ExportPipeline } = {
    page: testPagePipeline({ worker: 'api-test', stepMs: 5 }),
    export: testExportPipeline(),
  },
): ScriptedPipelines {
  const released = new Set<string>();
  const waiters = new Map<string, Array<() => void>>();

  function heldUntilReleased(jobId: string, signal: AbortSignal): Promise<void> {
    if (released.has(jobId)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const list = waiters.get(jobId) ?? [];
      list.push(resolve);
      waiters.set(jobId, list);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }

  return {
    page: {
      async processPage(task, context) {
        const name = task.page.name.split('/').at(-1) ?? '';
        if (name.startsWith('hold-')) {
          // Held once it has entered its first step: a job processing, its page in a step.
          let entered = false;
          const holding = {
            ...context,
            enterStep: async (step: Parameters<typeof context.enterStep>[0]) => {
              await context.enterStep(step);
              if (entered) return;
              entered = true;
              await heldUntilReleased(task.jobId, context.signal);
            },
          };
          return base.page.processPage(task, holding);
        }
        if (name.startsWith('decode-')) {
          await context.enterStep('layout');
          await prepareImage(await context.blobs.get(task.page.blobKey), { name: task.page.name, maxPixels: 100_000_000 });
        }
        if (name.startsWith('fail-')) {
          await context.enterStep('layout');
          // Not retryable: the job fails on the first try.
          throw Object.assign(new Error(`the scripted pipeline refuses ${name}`), { retryable: false });
        }
        return base.page.processPage(task, context);
      },
    },
    export: base.export,
    release(jobId) {
      released.add(jobId);
      for (const resolve of waiters.get(jobId) ?? []) resolve();
      waiters.delete(jobId);
    },
  };
}
