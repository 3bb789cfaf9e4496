// The page counters around a pipeline: a failure of the page counts, the database going away under
// it does not (the task waits for the database and runs again), nor does a cancel.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { measuredPagePipeline } from '../../src/pipeline/measured-page-pipeline.ts';
import { pagesFailed, pagesProcessed } from '../../src/metrics/metrics.ts';
import type { PageContext, PageTask } from '../../src/pipeline/pipeline.ts';

const count = async (counter: typeof pagesFailed): Promise<number> => (await counter.get()).values[0]?.value ?? 0;

function run(error: Error | null, signal = new AbortController().signal): Promise<unknown> {
  const pipeline = measuredPagePipeline({
    async processPage(_task, context) {
      await context.enterStep('layout');
      if (error) throw error;
      return {} as never;
    },
  });
  const context = { signal, enterStep: async () => {} } as unknown as PageContext;
  return pipeline.processPage({} as PageTask, context);
}

test('a failed page counts; a database outage under the page and a cancelled page do not', async () => {
  const failed = await count(pagesFailed);
  const processed = await count(pagesProcessed);
  await run(null);
  assert.equal(await count(pagesProcessed), processed + 1);

  await assert.rejects(run(new Error('the image is unreadable')), { message: 'the image is unreadable' });
  assert.equal(await count(pagesFailed), failed + 1);

  // What node-postgres throws when PostgreSQL restarts under a query, and a refused connection.
  await assert.rejects(run(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })), {
    code: '57P01',
  });
  await assert.rejects(run(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })), {
    code: 'ECONNREFUSED',
  });
  await assert.rejects(run(new Error('Connection terminated unexpectedly')), { message: 'Connection terminated unexpectedly' });
  assert.equal(await count(pagesFailed), failed + 1, 'an outage is not a failure of the page');

  const cancelled = new AbortController();
  cancelled.abort();
  await assert.rejects(run(new Error('aborted'), cancelled.signal), { message: 'aborted' });
  assert.equal(await count(pagesFailed), failed + 1);
});
