// Whether training is offered (src/runtime/trainer-probe.ts): TRAINER=off never, on always, auto
// where the Python it finds imports the trainer's packages; looked for once per process.
import assert from 'node:assert/strict';
import os from 'node:os';
import { test } from 'node:test';
import { loadConfig } from '../../src/platform/config.ts';
import { trainerAvailability } from '../../src/runtime/trainer-probe.ts';

const training = (env: Record<string, string>) => loadConfig(env).training;

test('TRAINER: auto by default; off, on; anything else is a configuration problem', () => {
  const cores = os.availableParallelism();
  assert.deepEqual(training({}), {
    mode: 'auto',
    python: null,
    maxMinutes: 30,
    concurrency: 1,
    threads: cores,
    niceness: 10,
    quantize: false,
  });
  assert.deepEqual(training({ TRAINER: 'off', TRAINER_PYTHON: '/opt/py/bin/python3' }), {
    mode: 'off',
    python: '/opt/py/bin/python3',
    maxMinutes: 30,
    concurrency: 1,
    threads: cores,
    niceness: 10,
    quantize: false,
  });
  assert.throws(() => training({ TRAINER: 'yes' }), /TRAINER must be one of auto, on, off/);
});

test('the training settings: budget, trainings at once, threads (at most the cores), nice value, 8 bits', () => {
  const settings = training({
    TRAINING_MAX_MINUTES: '12.5',
    TRAINER_CONCURRENCY: '2',
    TRAINER_THREADS: '256',
    TRAINER_NICE: '0',
    TRAINING_QUANTIZE: '1',
  });
  assert.deepEqual(
    {
      maxMinutes: settings.maxMinutes,
      concurrency: settings.concurrency,
      threads: settings.threads,
      niceness: settings.niceness,
      quantize: settings.quantize,
    },
    { maxMinutes: 12.5, concurrency: 2, threads: os.availableParallelism(), niceness: 0, quantize: true },
  );
  assert.throws(() => training({ TRAINER_NICE: '20' }), /TRAINER_NICE/);
  assert.throws(() => training({ TRAINING_MAX_MINUTES: '0' }), /TRAINING_MAX_MINUTES/);
});

test('off and on answer without looking', async () => {
  assert.deepEqual(await trainerAvailability(training({ TRAINER: 'off' }))(), { available: false, python: null, reason: 'TRAINER=off' });
  assert.equal((await trainerAvailability(training({ TRAINER: 'on', TRAINER_PYTHON: '/nonexistent' }))()).available, true);
});

test('auto: a Python that is not there, or that fails the imports, is no trainer; one that passes is', async () => {
  const missing = await trainerAvailability(training({ TRAINER_PYTHON: '/nonexistent/python3' }))();
  assert.deepEqual(missing, {
    available: false,
    python: null,
    reason: 'no Python with PyTorch, ONNX, NumPy and Pillow (tried /nonexistent/python3)',
  });
  // `false` and `true` stand for a Python whose imports fail and one whose imports pass.
  assert.equal((await trainerAvailability(training({ TRAINER_PYTHON: '/bin/false' }))()).available, false);
  const found = await trainerAvailability(training({ TRAINER_PYTHON: '/bin/true' }))();
  assert.deepEqual(found, { available: true, python: '/bin/true', reason: '/bin/true has PyTorch, ONNX, NumPy and Pillow' });
});

test('looked for once: later calls get the same answer', async () => {
  const probe = trainerAvailability(training({ TRAINER_PYTHON: '/bin/true' }));
  const first = probe();
  assert.equal(probe(), first);
});
