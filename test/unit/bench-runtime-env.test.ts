// The runtime settings the benchmarks give the service's processes (bench/lib/runtime-env.ts), as
// package.json's `npm start` sets them: the caller's own values kept, tcmalloc found where installed.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { installedTcmalloc, serviceRuntimeEnv } from '../../bench/lib/runtime-env.ts';

test('tcmalloc is the first libtcmalloc_minimal.so.4 under a -linux-gnu directory, in name order; none is ""', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'hwr-libs-'));
  try {
    assert.equal(installedTcmalloc(root), '');
    for (const triplet of ['x86_64-linux-gnu', 'aarch64-linux-gnu', 'i386-linux-gnu', 'tcmalloc-elsewhere'])
      await mkdir(path.join(root, triplet));
    await writeFile(path.join(root, 'tcmalloc-elsewhere', 'libtcmalloc_minimal.so.4'), '');
    assert.equal(installedTcmalloc(root), '', 'only -linux-gnu directories count');
    await writeFile(path.join(root, 'x86_64-linux-gnu', 'libtcmalloc_minimal.so.4'), '');
    await writeFile(path.join(root, 'i386-linux-gnu', 'libtcmalloc_minimal.so.4'), '');
    assert.equal(installedTcmalloc(root), path.join(root, 'i386-linux-gnu', 'libtcmalloc_minimal.so.4'));
    assert.equal(installedTcmalloc(path.join(root, 'missing')), '');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("the service's runtime settings keep what the caller set, an empty LD_PRELOAD included", () => {
  const chosen = serviceRuntimeEnv({ MALLOC_ARENA_MAX: '4', LD_PRELOAD: '', NODE_OPTIONS: '--max-semi-space-size=16' });
  assert.equal(chosen.MALLOC_ARENA_MAX, '4');
  assert.equal(chosen.LD_PRELOAD, '');
  assert.equal(chosen.NODE_OPTIONS, '--max-semi-space-size=4 --max-semi-space-size=16');
  const defaults = serviceRuntimeEnv({});
  assert.deepEqual(
    [defaults.MALLOC_ARENA_MAX, defaults.MALLOC_MMAP_THRESHOLD_, defaults.MALLOC_TRIM_THRESHOLD_, defaults.LD_PRELOAD],
    ['1', '268435456', '536870912', installedTcmalloc()],
  );
});
