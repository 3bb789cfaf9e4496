// Model runs are bounded: threads and concurrent runs never exceed the cores.
import assert from 'node:assert/strict';
import os from 'node:os';
import { test } from 'node:test';
import { loadConfig } from '../../src/platform/config.ts';
import { Semaphore } from '../../src/recognition/threads/concurrency.ts';

test('a semaphore runs at most its permits at once, in arrival order', async () => {
  const semaphore = new Semaphore(2);
  let running = 0;
  let peak = 0;
  const started: number[] = [];
  const task = (id: number) =>
    semaphore.run(async () => {
      started.push(id);
      running += 1;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setImmediate(resolve));
      running -= 1;
      if (id === 3) throw new Error('task 3 failed');
      return id;
    });
  const results = await Promise.allSettled([1, 2, 3, 4, 5].map(task));
  assert.equal(peak, 2);
  assert.deepEqual(started, [1, 2, 3, 4, 5]);
  assert.deepEqual(
    results.map((result) => result.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
  );
  assert.throws(() => new Semaphore(0), RangeError);
});

test('ORT_THREADS and RECOGNITION_CONCURRENCY are bounded by the cores', () => {
  const cores = Math.max(1, os.availableParallelism());
  const defaults = loadConfig({}).recognition;
  assert.equal(defaults.threads, cores);
  assert.equal(defaults.concurrency, 1);
  const many = loadConfig({ ORT_THREADS: String(cores * 4), RECOGNITION_CONCURRENCY: String(cores * 4) }).recognition;
  assert.equal(many.threads, cores);
  assert.equal(many.concurrency, 1);
  const single = loadConfig({ ORT_THREADS: '1', RECOGNITION_CONCURRENCY: '64' }).recognition;
  assert.equal(single.threads, 1);
  assert.equal(single.concurrency, cores);
  assert.equal(loadConfig({ ORT_THREADS: '1' }).recognition.concurrency, cores);
  assert.throws(() => loadConfig({ RECOGNITION_CONCURRENCY: 'lots' }), /RECOGNITION_CONCURRENCY must be an integer/);
  assert.equal(loadConfig({ MODEL_DIR: '/models/hand-a' }).recognition.modelDir, '/models/hand-a');
});
