// onnxruntime-node sessions and input tensors. Every session of the process lives in one
// inference worker thread (inference-worker.ts): onnxruntime-node's `run` returns a promise but
// is a synchronous native call, which on the main thread would hold the event loop (HTTP
// requests, pg-boss, timers) for a whole model run. The worker starts with the first session,
// ends when the last is released, and keeps the process alive only while a request is in flight.
import { Worker } from 'node:worker_threads';
import { PipelineError } from '../page/errors.ts';
import type { InferenceReply, InferenceRequest, InferenceWorkerData } from './inference-worker.ts';
import type { InputNormalisation } from './model-spec.ts';

/** A model hosted in the inference worker, loaded there (or at its first use: lazySession); release() frees it there. */
export interface InferenceSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /** Whether the model is loaded in the worker now. */
  readonly loaded: boolean;
  /** Loads the model unless it is loaded (concurrent callers and runs share one load). */
  warm(): Promise<void>;
  release(): Promise<void>;
}

/** A float32 model input: its values and shape. */
interface FloatTensor {
  readonly data: Float32Array;
  readonly dims: readonly number[];
}

/** One inference worker and the requests it has not answered yet. */
class InferenceHost {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (reply: InferenceReply) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  /** onnxruntime calls in progress in the worker (inference-worker.ts); EXITING once the process exits. */
  private readonly nativeCalls = new Int32Array(new SharedArrayBuffer(4));
  /** Sessions loaded or loading here; the worker ends when this returns to 0. */
  sessions = 0;
  /** Set once the worker is gone (crashed, exited or closed): nothing more can be asked of it. */
  failure: Error | null = null;

  constructor() {
    this.worker = new Worker(new URL('./inference-worker.ts', import.meta.url), {
      name: 'hwr-inference',
      workerData: { nativeCalls: this.nativeCalls } satisfies InferenceWorkerData,
    });
    this.worker.unref();
    this.worker.on('message', (reply: InferenceReply) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) this.worker.unref();
      waiting.resolve(reply);
    });
    this.worker.on('error', (error) => this.fail(new Error(`the inference worker failed: ${error.message}`, { cause: error })));
    this.worker.on('exit', (code) => this.fail(new Error(`the inference worker exited unexpectedly (exit code ${code})`)));
  }

  request(message: (id: number) => InferenceRequest, transfer: ArrayBuffer[] = []): Promise<InferenceReply> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // Referenced while a request is in flight, so that a process waiting on a model run does not exit.
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage(message(id), transfer);
    });
  }

  /** Ends the worker once nothing is loaded in it. */
  close(): void {
    if (this.failure) return;
    this.failure = new Error('the inference worker was closed');
    if (host === this) host = null;
    void this.worker.terminate();
  }

  /**
   * At process exit (process.exit included): waits, blocking, until no onnxruntime call is in
   * progress in the worker and stops new ones, so that Node stops the worker between calls
   * rather than aborting the process in the middle of one (at most EXIT_WAIT_MS).
   */
  quiesce(): void {
    if (this.failure) return;
    const deadline = Date.now() + EXIT_WAIT_MS;
    for (;;) {
      const count = Atomics.compareExchange(this.nativeCalls, 0, 0, EXITING);
      if (count === 0 || count === EXITING || Date.now() >= deadline) return;
      Atomics.wait(this.nativeCalls, 0, count, deadline - Date.now());
    }
  }

  /** Makes the worker crash: an uncaught exception there (tests). */
  crash(): void {
    this.worker.postMessage({ kind: 'crash' } satisfies InferenceRequest);
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    if (host === this) host = null;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const waiting of pending)
      waiting.reject(new Error(`${error.message}; the model request in flight was abandoned`, { cause: error }));
    void this.worker.terminate();
  }
}

/** `nativeCalls` once the process is exiting (the same in inference-worker.ts). */
const EXITING = -1;
/** Longest a process exit waits for the model run in progress. */
const EXIT_WAIT_MS = 30_000;

let host: InferenceHost | null = null;
let exitHooked = false;

function currentHost(): InferenceHost {
  if (!host) {
    if (!exitHooked) process.on('exit', () => host?.quiesce());
    exitHooked = true;
    host = new InferenceHost();
  }
  return host;
}

async function loadIn(
  target: InferenceHost,
  file: string,
  threads: number,
  outputClasses: readonly number[] | null,
): Promise<{ id: number; inputNames: string[]; outputNames: string[] }> {
  target.sessions += 1;
  let reply: InferenceReply;
  try {
    reply = await target.request((id) => ({ kind: 'load', id, file, threads, outputClasses: outputClasses ? [...outputClasses] : null }));
  } catch (error) {
    target.sessions -= 1;
    if (target.sessions === 0) target.close();
    throw error;
  }
  if (reply.kind === 'loaded') return { id: reply.session, inputNames: reply.inputNames, outputNames: reply.outputNames };
  target.sessions -= 1;
  if (target.sessions === 0) target.close();
  const message = reply.kind === 'failed' ? reply.message : `unexpected answer ${reply.kind}`;
  throw new PipelineError('model_invalid', `cannot load the ONNX model ${file}: ${message}`);
}

class WorkerSession implements InferenceSession {
  inputNames: readonly string[] = [];
  outputNames: readonly string[] = [];
  /** The worker the model is loaded in; null until it is first loaded (lazySession). */
  private host: InferenceHost | null = null;
  private id = 0;
  private reloading: Promise<void> | null = null;
  private released = false;

  private readonly file: string;
  private readonly threads: number;
  private readonly outputClasses: readonly number[] | null;

  constructor(file: string, threads: number, options: SessionOptions) {
    this.file = file;
    this.threads = threads;
    this.outputClasses = options.outputClasses ?? null;
  }

  get loaded(): boolean {
    return !this.released && this.host !== null && this.host.failure === null;
  }

  warm(): Promise<void> {
    if (this.released || this.loaded) return Promise.resolve();
    // Not loaded yet (lazySession), or the worker crashed (its runs in flight failed): load it, in a new worker after a crash.
    this.reloading ??= this.reload().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  async run(input: FloatTensor): Promise<{ data: Float32Array; dims: readonly number[] }> {
    if (this.released) throw new Error(`the inference session of ${this.file} was released`);
    await this.warm();
    const host = this.host;
    if (!host) throw new Error(`the inference session of ${this.file} was released`);
    // Move the input to the worker (the caller's array is detached) unless it is a view of a larger buffer.
    const { buffer, byteOffset, byteLength } = input.data;
    const whole = buffer instanceof ArrayBuffer && byteOffset === 0 && byteLength === buffer.byteLength;
    const data = whole ? input.data : input.data.slice();
    const reply = await host.request(
      (id) => ({ kind: 'run', id, session: this.id, data, dims: [...input.dims] }),
      [data.buffer as ArrayBuffer],
    );
    if (reply.kind === 'output') {
      runTimes.set(this.file, (runTimes.get(this.file) ?? 0) + reply.runMs);
      return { data: reply.data, dims: reply.dims };
    }
    if (reply.kind === 'failed') {
      if (reply.code) throw new PipelineError(reply.code, reply.message);
      const error = new Error(reply.message);
      if (reply.stack) error.stack = reply.stack;
      throw error;
    }
    throw new Error(`unexpected answer ${reply.kind} from the inference worker`);
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.reloading?.catch(() => undefined);
    const target = this.host;
    if (!target || target.failure) return;
    try {
      await target.request((id) => ({ kind: 'release', id, session: this.id }));
    } finally {
      target.sessions -= 1;
      if (target.sessions === 0) target.close();
    }
  }

  private async reload(): Promise<void> {
    const target = currentHost();
    const started = performance.now();
    const loaded = await loadIn(target, this.file, this.threads, this.outputClasses);
    const total = loadTimes.get(this.file) ?? { ms: 0, loads: 0 };
    loadTimes.set(this.file, { ms: total.ms + performance.now() - started, loads: total.loads + 1 });
    this.host = target;
    this.id = loaded.id;
    this.inputNames = loaded.inputNames;
    this.outputNames = loaded.outputNames;
  }
}

/**
 * Crashes the inference worker (for tests): its requests in flight fail, and each session loads
 * its model again in a new worker at its next run.
 */
export function crashInferenceWorker(): void {
  host?.crash();
}

/** The memory outside V8's heap (buffers) that the inference worker holds now, dead or alive; null without a worker (tests). */
export async function inferenceWorkerExternalMemory(): Promise<number | null> {
  if (!host || host.failure) return null;
  const reply = await host.request((id) => ({ kind: 'external-memory', id }));
  return reply.kind === 'external-memory' ? reply.bytes : null;
}

/** Milliseconds of model runs in the inference worker, per model file, since the process started. */
const runTimes = new Map<string, number>();

/** A copy of the model run times (bench/recognize.ts splits a page's time by model with it). */
export function modelRunTotals(): Map<string, number> {
  return new Map(runTimes);
}

/**
 * Per model file, how many times it was loaded in the inference worker since the process started
 * and the milliseconds those loads took, waits in the worker's queue included (bench/cold-start.ts).
 */
const loadTimes = new Map<string, { ms: number; loads: number }>();

/** A copy of the model load totals, per model file. */
export function modelLoadTotals(): Map<string, { ms: number; loads: number }> {
  return new Map(loadTimes);
}

export interface SessionOptions {
  /**
   * Cut the model's one output to these classes (ascending indices; graph/keep-output-classes.ts):
   * for a recognizer whose output is probabilities and whose decoding may choose only these.
   */
  outputClasses?: readonly number[] | null;
}

/** A session with its model loaded now (a model that cannot be loaded is model_invalid here). */
export async function createSession(file: string, threads: number, options: SessionOptions = {}): Promise<InferenceSession> {
  const session = new WorkerSession(file, threads, options);
  await session.warm();
  return session;
}

/**
 * A session whose model loads when first needed: at its first run, or when warm() says a page
 * is about to use it (docs/recognition.md, "Cold start"). Concurrent first runs share one load; a
 * load that fails fails those runs (model_invalid), and the next run tries again.
 */
export function lazySession(file: string, threads: number, options: SessionOptions = {}): InferenceSession {
  return new WorkerSession(file, threads, options);
}

export function floatTensor(data: Float32Array, dims: number[]): FloatTensor {
  return { data, dims };
}

/** Runs a single-input, single-output model in the inference worker. */
export async function runModel(session: InferenceSession, input: FloatTensor): Promise<{ data: Float32Array; dims: readonly number[] }> {
  if (!(session instanceof WorkerSession)) throw new TypeError('runModel needs a session from createSession');
  return session.run(input);
}

/**
 * Writes interleaved RGB pixels (0..255) as planar, normalised model input:
 * value = (pixel / 255 - mean[c]) / std[c]; one channel means luminance.
 * `target` is a [channels, height, rowStride]-shaped plane block starting at `offset`
 * (rowStride >= width lets callers pad lines of a batch to one width).
 */
export function writeNormalisedPlanes(
  pixels: ArrayLike<number>,
  width: number,
  height: number,
  norm: InputNormalisation,
  target: Float32Array,
  offset: number,
  rowStride: number,
): void {
  const plane = rowStride * height;
  if (norm.channels === 1) {
    const scale = 1 / (255 * norm.std[0]);
    const shift = norm.mean[0] / norm.std[0];
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        const i = (y * width + x) * 3;
        const grey = 0.299 * pixels[i] + 0.587 * pixels[i + 1] + 0.114 * pixels[i + 2];
        target[offset + y * rowStride + x] = grey * scale - shift;
      }
    }
    return;
  }
  const order = norm.channelOrder === 'bgr' ? [2, 1, 0] : [0, 1, 2];
  for (let c = 0; c < 3; c += 1) {
    const source = order[c];
    const scale = 1 / (255 * norm.std[c]);
    const shift = norm.mean[c] / norm.std[c];
    const base = offset + c * plane;
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        target[base + y * rowStride + x] = pixels[(y * width + x) * 3 + source] * scale - shift;
      }
    }
  }
}

/** The value a padded (white) pixel takes in each channel, for filling unused input. */
export function whiteValue(norm: InputNormalisation, channel: number): number {
  return (1 - norm.mean[channel]) / norm.std[channel];
}
