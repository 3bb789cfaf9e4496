// The inference worker thread: hosts every onnxruntime session of its process and runs
// the models, so that a model run (onnxruntime-node's `run` is a synchronous native call
// despite its promise) never holds the main event loop. Started and spoken to only by
// onnx.ts; messages carry Float32Array buffers by transfer, not by copy.
//
// A native call of onnxruntime cannot be interrupted: a worker stopped in the middle of one (the
// process ending with process.exit while a model runs) aborts the whole process. So every native
// call counts itself in `nativeCalls` (shared with the main thread), and the main thread, when
// its process exits, waits for the count to reach 0 and sets it to EXITING, after which no call starts.
import { readFile } from 'node:fs/promises';
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { fuseGraphChains } from './graph/fuse-elementwise.ts';
import { poolQuantisedValues } from './graph/pool-quantised.ts';
import { cutOutputClasses } from './graph/keep-output-classes.ts';
import { OnnxGraph } from './graph/onnx-graph.ts';

export type InferenceRequest =
  /** `outputClasses`: cut the model's output to these classes (graph/keep-output-classes.ts); null: all. */
  | { kind: 'load'; id: number; file: string; threads: number; outputClasses: number[] | null }
  | { kind: 'run'; id: number; session: number; data: Float32Array; dims: number[] }
  | { kind: 'release'; id: number; session: number }
  /** How much memory outside V8's heap (buffers) this thread holds now, dead or alive (tests). */
  | { kind: 'external-memory'; id: number }
  /** Throw, uncaught, as a bug would (tests of what a crash does). */
  | { kind: 'crash' };

export type InferenceReply =
  | { id: number; kind: 'loaded'; session: number; inputNames: string[]; outputNames: string[] }
  /** `runMs`: how long onnxruntime's run took in the worker. */
  | { id: number; kind: 'output'; data: Float32Array; dims: number[]; runMs: number }
  | { id: number; kind: 'released' }
  | { id: number; kind: 'external-memory'; bytes: number }
  /** `code`: the PipelineError code the main thread raises; null: a plain Error. */
  | { id: number; kind: 'failed'; code: 'model_invalid' | 'model_mismatch' | null; message: string; stack?: string };

/** workerData: the Int32Array over a SharedArrayBuffer whose element 0 counts the native calls in progress. */
export interface InferenceWorkerData {
  nativeCalls: Int32Array;
}

/**
 * The model as onnxruntime is first given it, decoded once and encoded once: its chains of
 * elementwise operators fused (graph/fuse-elementwise.ts: PP-OCRv4 runs twice as fast), an 8-bit
 * model's first max pool run channels-last on its 8-bit values (graph/pool-quantised.ts) and, where
 * asked, its output cut to `outputClasses` (graph/keep-output-classes.ts); null: the file as it is.
 * `forSpeed` false: the cut alone. The other rewrites only save time, so a model they cannot read
 * or find nothing in is not rewritten, and onnxruntime says what is wrong with one it cannot load.
 * Cutting the classes is not optional (the caller decodes the classes it asked for): a model whose
 * output cannot be cut throws.
 */
function rewrittenModel(bytes: Uint8Array, outputClasses: readonly number[] | null, forSpeed: boolean): Uint8Array | null {
  let graph: OnnxGraph | null = null;
  if (forSpeed)
    try {
      const decoded = OnnxGraph.decode(bytes);
      const fused = fuseGraphChains(decoded) !== null;
      if (poolQuantisedValues(decoded) > 0 || fused) graph = decoded;
    } catch {
      graph = null;
    }
  if (!outputClasses) return graph?.encode() ?? null;
  graph ??= OnnxGraph.decode(bytes);
  cutOutputClasses(graph, outputClasses);
  return graph.encode();
}

/**
 * Frees the memory of a buffer that nothing reads any more (detaching it) now, not at a garbage
 * collection. This thread allocates little JavaScript, so V8 collects here only once some 64 MB of
 * buffers have gathered: the model files read and the inputs run stayed, and the thread held 28-105
 * MB of buffers as a printed page's detector run began (where a process's peak is), 24-26 MB with
 * them freed (docs/benchmarks.md, "Dead buffers in the inference worker"). A view of part of a
 * buffer, or a buffer already freed, is left alone.
 */
function releaseNow(view: ArrayBufferView | null): void {
  const buffer = view?.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.detached || view?.byteOffset !== 0 || view.byteLength !== buffer.byteLength) return;
  buffer.transfer(0);
}

/** `nativeCalls[0]` once the process is exiting: no native call may start (the same in onnx.ts). */
const EXITING = -1;

const port = parentPort;
if (port) {
  const { nativeCalls } = workerData as InferenceWorkerData;
  /** Runs one onnxruntime call, counted in nativeCalls; refused once the process is exiting. */
  const native = async <T>(call: () => Promise<T>): Promise<T> => {
    for (;;) {
      const count = Atomics.load(nativeCalls, 0);
      if (count === EXITING) throw new Error('the process is exiting');
      if (Atomics.compareExchange(nativeCalls, 0, count, count + 1) === count) break;
    }
    try {
      return await call();
    } finally {
      Atomics.sub(nativeCalls, 0, 1);
      Atomics.notify(nativeCalls, 0);
    }
  };
  const sessions = new Map<number, ort.InferenceSession>();
  let nextSession = 1;

  const handle = async (request: Exclude<InferenceRequest, { kind: 'crash' }>): Promise<InferenceReply> => {
    switch (request.kind) {
      case 'load': {
        let session: ort.InferenceSession;
        try {
          const options: ort.InferenceSession.SessionOptions = {
            intraOpNumThreads: request.threads,
            interOpNumThreads: 1,
            executionMode: 'sequential',
            graphOptimizationLevel: 'all',
            // Line widths vary from page to page; the arena keeps the largest activations ever
            // seen (about 200 MB more at peak over the fixture pages, at no measurable speed gain).
            enableCpuMemArena: false,
            // A memory pattern plans one block for all of a run's activations, of a new size for
            // every new width: over the fixture pages v3 peaked about 100 MB higher with it, at the
            // same speed (docs/recognition.md, "Threads and concurrency").
            enableMemPattern: false,
            // onnxruntime's intra-op threads busy-wait between a run's operators by default. Here they
            // share the cores with the main thread's own page work (crops, beam search, exports) and
            // with other processes, and the spinning took that time from them: ten fixture pages
            // read 20-43 % faster with 21-26 % less CPU without it (docs/benchmarks.md, "Spinning").
            extra: { session: { intra_op: { allow_spinning: '0' } } },
          };
          const { outputClasses } = request;
          const bytes = await readFile(request.file);
          const rewritten = rewrittenModel(bytes, outputClasses, true);
          let unfused: Uint8Array | null = null;
          try {
            session = await native(async () => {
              if (rewritten)
                try {
                  return await ort.InferenceSession.create(rewritten, options);
                } catch {
                  // a rewrite onnxruntime does not take: the model as it is, its classes cut where asked
                }
              unfused = rewrittenModel(bytes, outputClasses, false);
              return unfused ? ort.InferenceSession.create(unfused, options) : ort.InferenceSession.create(request.file, options);
            });
          } finally {
            // onnxruntime keeps its own copy of the model
            for (const encoded of [bytes, rewritten, unfused]) releaseNow(encoded);
          }
        } catch (error) {
          return { id: request.id, kind: 'failed', code: 'model_invalid', message: (error as Error).message };
        }
        const id = nextSession++;
        sessions.set(id, session);
        return { id: request.id, kind: 'loaded', session: id, inputNames: [...session.inputNames], outputNames: [...session.outputNames] };
      }
      case 'run': {
        const session = sessions.get(request.session);
        if (!session) throw new Error(`no inference session ${request.session} in the inference worker (released?)`);
        const input = new ort.Tensor('float32', request.data, request.dims);
        const started = performance.now();
        const outputs = await native(() => session.run({ [session.inputNames[0]]: input }));
        const runMs = performance.now() - started;
        const output = outputs[session.outputNames[0]];
        // The input came by transfer and nothing reads it now, unless the graph handed it back as its output.
        if ((output.data as ArrayBufferView).buffer !== request.data.buffer) releaseNow(request.data);
        if (output.type !== 'float32')
          return { id: request.id, kind: 'failed', code: 'model_mismatch', message: `model output is ${output.type}, expected float32` };
        return { id: request.id, kind: 'output', data: output.data as Float32Array, dims: [...output.dims], runMs };
      }
      case 'release': {
        const session = sessions.get(request.session);
        sessions.delete(request.session);
        if (session) await native(() => session.release());
        return { id: request.id, kind: 'released' };
      }
      case 'external-memory':
        return { id: request.id, kind: 'external-memory', bytes: getHeapStatistics().external_memory };
    }
  };

  port.on('message', (request: InferenceRequest) => {
    if (request.kind === 'crash') throw new Error('the inference worker was asked to crash');
    handle(request).then(
      (reply) => {
        if (reply.kind !== 'output') return port.postMessage(reply);
        const { buffer, byteOffset, byteLength } = reply.data;
        try {
          port.postMessage(reply, buffer instanceof ArrayBuffer && byteOffset === 0 && byteLength === buffer.byteLength ? [buffer] : []);
        } catch {
          // onnxruntime may hand out a buffer that cannot be moved: send a copy.
          const data = reply.data.slice();
          port.postMessage({ ...reply, data }, [data.buffer]);
        }
      },
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        port.postMessage({ id: request.id, kind: 'failed', code: null, message: failure.message, stack: failure.stack });
      },
    );
  });
}
