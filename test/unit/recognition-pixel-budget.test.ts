import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { pagePixels } from '../../src/recognition/engine/page-pixels.ts';
import { defaultPixelBudget, PixelBudget } from '../../src/recognition/engine/pixel-budget.ts';

/** A piece of work that records when it runs and finishes when told. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, work: () => opened };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('pixel budget', () => {
  test('pages run together while their pixels fit, and wait (in order) when they do not', async () => {
    const budget = new PixelBudget(100);
    const started: string[] = [];
    const gates = { a: gate(), b: gate(), c: gate(), d: gate() };
    const run = (name: keyof typeof gates, pixels: number) =>
      budget.run(pixels, async () => {
        started.push(name);
        await gates[name].work();
      });
    const all = [run('a', 60), run('b', 40), run('c', 50), run('d', 10)];
    await tick();
    assert.deepEqual(started, ['a', 'b']);
    assert.equal(budget.reserved, 100);
    gates.b.open();
    await tick();
    // d (10) would fit beside a, but c came first: first come, first served.
    assert.deepEqual(started, ['a', 'b']);
    gates.a.open();
    await tick();
    assert.deepEqual(started, ['a', 'b', 'c', 'd']);
    gates.c.open();
    gates.d.open();
    await Promise.all(all);
    assert.equal(budget.reserved, 0);
  });

  test('a page larger than the whole budget runs alone instead of failing', async () => {
    const budget = new PixelBudget(100);
    const small = gate();
    const started: string[] = [];
    const first = budget.run(30, async () => {
      started.push('small');
      await small.work();
    });
    const huge = budget.run(1_000, async () => {
      started.push('huge');
      assert.equal(budget.reserved, 100);
    });
    await tick();
    assert.deepEqual(started, ['small']);
    small.open();
    await Promise.all([first, huge]);
    assert.deepEqual(started, ['small', 'huge']);
  });

  test('a failing page gives its pixels back; an aborted waiting page leaves the queue', async () => {
    const budget = new PixelBudget(10);
    await assert.rejects(
      budget.run(10, async () => {
        throw new Error('decode failed');
      }),
      /decode failed/,
    );
    assert.equal(budget.reserved, 0);
    const holder = gate();
    const held = budget.run(10, holder.work);
    const controller = new AbortController();
    const waiting = budget.run(5, async () => 'ran', controller.signal);
    controller.abort(new Error('job cancelled'));
    await assert.rejects(waiting, /job cancelled/);
    holder.open();
    await held;
    assert.equal(await budget.run(10, async () => 'next'), 'next');
  });

  test('the default is a quarter of the memory at 4 bytes a pixel', () => {
    assert.equal(defaultPixelBudget(16 * 1024 ** 3), 1024 ** 3);
  });
});

describe('what a page weighs', () => {
  const fixture = (name: string) => readFile(path.resolve(import.meta.dirname, '../fixtures/jpeg2000', name));

  test('its pixels from the header; a JPEG 2000 page seven times over (its decoder holds that much more); 1 when unreadable', async () => {
    assert.equal(await pagePixels(await fixture('copiste-lines.png')), 1261 * 192);
    assert.equal(await pagePixels(await fixture('copiste-lines.jp2')), 1261 * 192 * 7);
    assert.equal(await pagePixels(await fixture('copiste-lines.j2k')), 1261 * 192 * 7);
    assert.equal(await pagePixels(Buffer.from('not an image')), 1);
  });

  test('a page decoded reduced weighs what it is decoded at, where its format streams (JPEG 2000 is decoded whole first)', async () => {
    assert.equal(await pagePixels(await fixture('copiste-lines.png'), 100_000), 100_000);
    assert.equal(await pagePixels(await fixture('copiste-lines.png'), 1_000_000), 1261 * 192);
    assert.equal(await pagePixels(await fixture('copiste-lines.jp2'), 100_000), 1261 * 192 * 7);
  });
});
