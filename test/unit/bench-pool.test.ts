// bench/lib/pool.ts: the peers' process pool and bench:throughput's concurrent jobs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mapPool } from '../../bench/lib/pool.ts';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('runs at most `concurrency` at once, each next item as one ends, results in order', async () => {
  let running = 0;
  let most = 0;
  const started: number[] = [];
  const results = await mapPool([30, 5, 5, 5, 5], 2, async (ms, index) => {
    started.push(index);
    running += 1;
    most = Math.max(most, running);
    await tick(ms);
    running -= 1;
    return ms * 10;
  });
  assert.deepEqual(results, [300, 50, 50, 50, 50]);
  assert.equal(most, 2);
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
});

test('an empty list, a pool larger than the list, and a concurrency below one', async () => {
  assert.deepEqual(await mapPool([], 4, async () => 1), []);
  let running = 0;
  let most = 0;
  const work = async (value: number) => {
    running += 1;
    most = Math.max(most, running);
    await tick(1);
    running -= 1;
    return value + 1;
  };
  assert.deepEqual(await mapPool([1, 2], 8, work), [2, 3]);
  assert.equal(most, 2);
  most = 0;
  assert.deepEqual(await mapPool([1, 2, 3], 0, work), [2, 3, 4]);
  assert.equal(most, 1);
});

test('a failure rejects the whole pool', async () => {
  await assert.rejects(
    mapPool([1, 2, 3], 2, async (value) => {
      if (value === 2) throw new Error('page 2');
      return value;
    }),
    /page 2/,
  );
});
