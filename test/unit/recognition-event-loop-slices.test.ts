// Long page loops give the event loop a turn once a slice has passed (src/recognition/threads/event-loop-slices.ts),
// so that a process serving HTTP beside its page work answers between lines.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventLoopSlices, mapInSlices } from '../../src/recognition/threads/event-loop-slices.ts';

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Counts the turns other work got (a setImmediate chain) while `run` ran. */
async function turnsDuring(run: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let stopped = false;
  const tick = (): void => {
    if (stopped) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  await run();
  stopped = true;
  return turns;
}

test('mapInSlices gives what map gives, in order, with each index', async () => {
  const items = ['a', 'b', 'c', 'd'];
  assert.deepEqual(
    await mapInSlices(items, (item, index) => `${index}:${item}`),
    items.map((item, index) => `${index}:${item}`),
  );
  assert.deepEqual(await mapInSlices([], () => 1), []);
});

test('a loop longer than a slice lets other work run between its items', async () => {
  const turns = await turnsDuring(() =>
    mapInSlices(
      Array.from({ length: 12 }, (_, i) => i),
      () => busy(4),
      eventLoopSlices(5),
    ),
  );
  // 48 ms of work in 5 ms slices: a turn after about every second item
  assert.ok(turns >= 4, `other work ran ${turns} times`);
});

test('a loop shorter than its slice runs through without a turn', async () => {
  const turns = await turnsDuring(() =>
    mapInSlices(
      Array.from({ length: 12 }, (_, i) => i),
      () => busy(1),
      eventLoopSlices(60_000),
    ),
  );
  assert.equal(turns, 0);
});

test('the pause resolves to nothing within a slice and to a promise after it', async () => {
  // A slice long enough that no preemption or GC pause between two statements spends it.
  const pause = eventLoopSlices(50);
  assert.equal(pause(), undefined);
  busy(51);
  const turn = pause();
  assert.ok(turn instanceof Promise);
  await turn;
  assert.equal(pause(), undefined, 'a new slice starts after the turn');
});
