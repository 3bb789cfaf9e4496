// Whether this service offers training (docs/models.md, "Where training runs"): the trainer under
// train/ needs Python 3 with PyTorch, ONNX, NumPy and Pillow. TRAINER=auto looks for such a Python
// once per process (TRAINER_PYTHON, else `python3` on the PATH, then /usr/bin/python3, as
// train/tests/run.mjs does), the first time it is asked; TRAINER=on offers training without looking
// (a trainer runs on another machine); TRAINER=off never offers it. Where training is not offered,
// POST /v1/models answers 503 training_unavailable with TRAINING_INSTRUCTION.
import { execFile } from 'node:child_process';
import type { Config } from '../platform/config.ts';

/** What an operator does to offer training: one line, the detail of training_unavailable. */
export const TRAINING_INSTRUCTION =
  "Training needs Python 3 with PyTorch, ONNX, NumPy and Pillow on the machine that trains: install Debian's python3-torch " +
  'python3-onnx python3-numpy python3-pil libopenblas0-pthread (or pip install -r train/requirements.txt), or set TRAINER_PYTHON to such a Python, ' +
  'and restart the service (TRAINER=on where a trainer runs on another machine).';

/** The packages the trainer imports (train/requirements.txt). */
const NEEDED = 'import torch, onnx, numpy, PIL';
/** Importing PyTorch takes seconds on a slow machine; a Python that takes longer is not used. */
const PROBE_TIMEOUT_MS = 60_000;

export interface TrainerAvailability {
  available: boolean;
  /** The Python that has the packages; null when none was looked for (TRAINER=on, off) or found. */
  python: string | null;
  /** Why training is or is not offered, for the log. */
  reason: string;
}

/** The answer for this process, looked for once (on the first call) and kept. */
export function trainerAvailability(training: Config['training']): () => Promise<TrainerAvailability> {
  let answer: Promise<TrainerAvailability> | null = null;
  return () => (answer ??= probe(training));
}

async function probe(training: Config['training']): Promise<TrainerAvailability> {
  if (training.mode === 'off') return { available: false, python: null, reason: 'TRAINER=off' };
  if (training.mode === 'on') return { available: true, python: null, reason: 'TRAINER=on: a trainer runs elsewhere' };
  const candidates = training.python ? [training.python] : ['python3', '/usr/bin/python3'];
  for (const python of [...new Set(candidates)]) {
    if (await hasPackages(python)) return { available: true, python, reason: `${python} has PyTorch, ONNX, NumPy and Pillow` };
  }
  return { available: false, python: null, reason: `no Python with PyTorch, ONNX, NumPy and Pillow (tried ${candidates.join(', ')})` };
}

function hasPackages(python: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ['-c', NEEDED], { timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error) => resolve(error === null));
  });
}
