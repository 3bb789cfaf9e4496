// The Python tests of train/ (train/tests: data loading and ONNX export on real lines from
// test/fixtures), run here so that `npm test` runs them where a Python with torch, onnx, numpy
// and Pillow is found (train/tests/run.mjs); skipped otherwise, saying why (docs/training.md, "Tests").
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '..', '..');
/** train/tests/run.mjs's exit status when no Python has the packages. */
const NO_PYTHON = 77;

test('train/ Python tests: data loading and ONNX export', async (t) => {
  const child = spawn(process.execPath, ['train/tests/run.mjs'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (status === NO_PYTHON) {
    t.skip(output.trim());
    return;
  }
  assert.equal(status, 0, output);
  assert.match(output, /^OK/m, output);
});
