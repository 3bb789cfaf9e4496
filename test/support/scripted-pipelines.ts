// Page and export pipelines for the HTTP API tests, steered by the ZIP entry names a
// test uploads: a page named `fail-*` fails for good, a page named `hold-*` stays in
// processing until the test releases its job (or the job is cancelled), a page named `decode-*`
// is decoded by the real image preparation (and fails as it does when its pixels are cut off).
// Everything else runs through the fast test pipeline of test-pipelines.ts.
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import type { ExportPipeline, PagePipeline } from '../../src/pipeline/pipeline.ts';
import { testExportPipeline, testPagePipeline } from './test-pipelines.ts';

export interface ScriptedPipelines {
  page: PagePipeline;
  export: ExportPipeline;
  /** Lets every held page of the job finish. */
  release(jobId: string): void;
}

export function scriptedPipelines(): ScriptedPipelines {
  const base = testPagePipeline({ worker: 'api-test', stepMs: 5 });
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
          await context.enterStep('layout');
          await heldUntilReleased(task.jobId, context.signal);
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
        return base.processPage(task, context);
      },
    },
    export: testExportPipeline(),
    release(jobId) {
      released.add(jobId);
      for (const resolve of waiters.get(jobId) ?? []) resolve();
      waiters.delete(jobId);
    },
  };
}
