// Model runs happen in the inference worker thread (src/recognition/models/onnx.ts): the main event
// loop keeps turning while a model runs; inputs move to the worker without a copy; load failures
// and non-float outputs keep their PipelineError codes; a crash of the worker fails the runs in
// flight instead of leaving them waiting, and the session's next run loads its model again;
// process.exit during a run ends the process with its exit code.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { builtinModelSpec } from '../../src/recognition/models/model-manifest.ts';
import {
  createSession,
  floatTensor,
  crashInferenceWorker,
  inferenceWorkerExternalMemory,
  runModel,
  type InferenceSession,
} from '../../src/recognition/models/onnx.ts';

const spec = builtinModelSpec();
const scratch = mkdtempSync(path.join(os.tmpdir(), 'hwr-inference-'));
let detection: InferenceSession;

before(async () => {
  detection = await createSession(spec.detection.file, 1);
});

after(() => detection?.release());

/** A detection input big enough that one run takes a while (a 1280 x 1280 page). */
function bigInput() {
  return floatTensor(new Float32Array(3 * 1280 * 1280).fill(0.5), [1, 3, 1280, 1280]);
}

/** A minimal ONNX model of one operator, y = op(x), x float32 of any shape, y of `outputType`. */
function unaryModel(opType: string, outputType: number, attributes: [name: string, value: number][] = []): Buffer {
  const varint = (value: number): number[] => {
    const bytes: number[] = [];
    while (value > 0x7f) {
      bytes.push((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    return [...bytes, value];
  };
  const bytes = (field: number, body: number[]): number[] => [...varint((field << 3) | 2), ...varint(body.length), ...body];
  const text = (field: number, value: string): number[] => bytes(field, [...Buffer.from(value)]);
  const number = (field: number, value: number): number[] => [...varint(field << 3), ...varint(value)];
  const tensorValue = (name: string, elementType: number): number[] => [
    ...text(1, name),
    ...bytes(2, bytes(1, [...number(1, elementType), ...bytes(2, bytes(1, text(2, 'n')))])),
  ];
  const attribute = (name: string, value: number): number[] => [...text(1, name), ...number(3, value), ...number(20, 2)];
  const node = [
    ...text(1, 'x'),
    ...text(2, 'y'),
    ...text(4, opType),
    ...attributes.flatMap(([name, value]) => bytes(5, attribute(name, value))),
  ];
  const graph = [
    ...bytes(1, node),
    ...text(2, opType.toLowerCase()),
    ...bytes(11, tensorValue('x', 1)),
    ...bytes(12, tensorValue('y', outputType)),
  ];
  return Buffer.from([...number(1, 7), ...bytes(8, number(2, 13)), ...bytes(7, graph)]);
}

/** y = Cast<to=INT32>(x): its output is not float32. */
function castToInt32Model(): Buffer {
  return unaryModel('Cast', 6, [['to', 6]]);
}

test('the event loop keeps turning while a model runs', async () => {
  let turns = 0;
  let running = true;
  const run = runModel(detection, bigInput()).finally(() => {
    running = false;
  });
  // On the main thread, onnxruntime's run (a native call in a setImmediate queued before this
  // chain) would finish before the chain's first turn; in the worker, the chain turns meanwhile.
  const turn = () => {
    if (!running) return;
    turns += 1;
    setImmediate(turn);
  };
  setImmediate(turn);
  const output = await run;
  assert.deepEqual(output.dims, [1, 1, 1280, 1280]);
  assert.equal(output.data.length, 1280 * 1280);
  assert.ok(turns >= 2, `the event loop turned ${turns} times while the model ran`);
});

test('the input buffer moves to the worker rather than being copied', async () => {
  const input = bigInput();
  await runModel(detection, input);
  assert.equal(input.data.length, 0, 'the caller’s array is detached: its buffer was transferred');
});

test('the worker frees an input once it is run, not at a garbage collection', async () => {
  const file = path.join(scratch, 'abs.onnx');
  writeFileSync(file, unaryModel('Abs', 1));
  const abs = await createSession(file, 1);
  try {
    const before = await inferenceWorkerExternalMemory();
    assert.ok(before !== null);
    // 40 MB: less than the growth of external memory at which V8 collects by itself
    const count = 10_000_000;
    const output = await runModel(abs, floatTensor(new Float32Array(count).fill(-2), [count]));
    assert.equal(output.data.length, count);
    assert.equal(output.data[count - 1], 2);
    const after = await inferenceWorkerExternalMemory();
    assert.ok(after !== null);
    assert.ok(after - before < 4_000_000, `the worker held ${((after - before) / 1e6).toFixed(1)} MB more after the run`);
  } finally {
    await abs.release();
  }
});

test('a model that cannot be loaded is model_invalid', async () => {
  const garbage = path.join(scratch, 'garbage.onnx');
  writeFileSync(garbage, 'not an onnx model');
  for (const file of [garbage, path.join(scratch, 'missing.onnx')]) {
    await assert.rejects(createSession(file, 1), (error: Error & { code?: string }) => {
      assert.equal(error.name, 'PipelineError');
      assert.equal(error.code, 'model_invalid');
      assert.match(error.message, /cannot load the ONNX model/);
      assert.ok(error.message.includes(file));
      return true;
    });
  }
});

test('a model whose output is not float32 is model_mismatch', async () => {
  const file = path.join(scratch, 'cast.onnx');
  writeFileSync(file, castToInt32Model());
  const session = await createSession(file, 1);
  try {
    assert.deepEqual([session.inputNames, session.outputNames], [['x'], ['y']]);
    await assert.rejects(runModel(session, floatTensor(new Float32Array([1.5, 2.5]), [2])), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'model_mismatch');
      assert.match(error.message, /model output is int32, expected float32/);
      return true;
    });
  } finally {
    await session.release();
  }
});

test('a crash of the worker fails the runs in flight, and the next run loads the model again', async () => {
  // The crash message goes first, so the worker dies before it takes any run: the three runs sent
  // after it are in flight when it dies (had the runs gone first, how many of them finish before the
  // crash depends on how busy the machine is).
  crashInferenceWorker();
  const inFlight = [1, 2, 3].map(() => runModel(detection, bigInput()));
  const settled = await Promise.all(
    inFlight.map((run) =>
      run.then(
        () => null,
        (error: Error) => error,
      ),
    ),
  );
  const failures = settled.filter((error) => error !== null);
  assert.equal(failures.length, 3, `${failures.length} of 3 runs in flight failed`);
  for (const error of failures)
    assert.match(error.message, /^the inference worker failed: .*asked to crash; the model request in flight was abandoned$/);
  const output = await runModel(detection, floatTensor(new Float32Array(3 * 64 * 64), [1, 3, 64, 64]));
  assert.deepEqual(output.dims, [1, 1, 64, 64]);
});

test('process.exit while a model runs ends the process with its exit code, not an abort', () => {
  // Node stops the worker at exit; in the middle of onnxruntime's native call that would abort the
  // process (onnxruntime-node: "terminate called after throwing an instance of 'Napi::Error'").
  const onnx = pathToFileURL(path.resolve(import.meta.dirname, '../../src/recognition/models/onnx.ts')).href;
  const script = `
    import { createSession, floatTensor, runModel } from ${JSON.stringify(onnx)};
    const session = await createSession(${JSON.stringify(spec.detection.file)}, 1);
    const input = () => floatTensor(new Float32Array(3 * 1280 * 1280), [1, 3, 1280, 1280]);
    const started = performance.now();
    await runModel(session, input());
    const runMs = performance.now() - started;
    // Two runs always in flight, each followed by another: the worker is never idle, so the exit
    // comes in the middle of a run however busy the machine is.
    const keepRunning = () => runModel(session, input()).then(keepRunning);
    keepRunning();
    keepRunning();
    setTimeout(() => { console.log('exiting'); process.exit(3); }, runMs * 1.5);`;
  const file = path.join(scratch, 'exit-mid-run.mjs');
  writeFileSync(file, script);
  const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(child.signal, null, child.stderr);
  assert.equal(child.status, 3, child.stderr);
  assert.doesNotMatch(child.stderr, /terminate called/);
  assert.match(child.stdout, /exiting/);
});

test('a released session cannot run', async () => {
  const session = await createSession(spec.detection.file, 1);
  await session.release();
  await session.release();
  await assert.rejects(runModel(session, bigInput()), /was released/);
});
