// `npm run test:train`: the Python tests of train/ (train/tests: data loading, ONNX export), run
// with the first Python that has what train/ needs (train/requirements.txt): $PYTHON, then
// `python3` on the PATH, then /usr/bin/python3 (Debian's python3-torch where the PATH's python3
// has no torch). They need no ../shared: their lines come from test/fixtures. Exits 77 when no
// Python has the packages: `npm test` (test/integration/train-python.test.ts) then skips them, saying why.
// Extra arguments go to unittest (e.g. `-k export`).
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', '..');
const NEEDED = 'import torch, onnx, numpy, PIL';
const candidates = [...new Set([process.env.PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean))];
const python = candidates.find((candidate) => spawnSync(candidate, ['-c', NEEDED], { stdio: 'ignore' }).status === 0);
if (!python) {
  console.error(
    `train/ tests skipped: no Python with torch, onnx, numpy and Pillow (tried ${candidates.join(', ')}); ` +
      "pip install -r train/requirements.txt, or Debian's python3-torch python3-onnx python3-numpy python3-pil, or set PYTHON",
  );
  process.exit(77);
}
// The export check runs train/check-onnx.mjs with this Node (export_onnx.py takes `node` from the PATH).
const env = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, PYTHONDONTWRITEBYTECODE: '1' };
const result = spawnSync(python, ['-m', 'unittest', 'discover', '--start-directory', 'train/tests', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env,
});
process.exit(result.status ?? 1);
