// Work that would hold the event loop (WebAssembly decoding, parsing a large uploaded XML file)
// runs in a worker thread of its own, one per call: `runInThread` starts the worker module with
// `data` and waits for its one answer, which the module gives with `answerFromThread`. A thread
// that has not answered in `timeoutMs` is stopped. Errors come back as their name, code and
// message, for the caller to turn into its own error types.
import { parentPort, Worker, workerData } from 'node:worker_threads';

/** What a thread's work threw: enough to rebuild a coded error on the calling side. */
export interface ThreadError {
  name: string;
  code: string | null;
  message: string;
}

type ThreadReply<T> = { ok: true; value: T } | { ok: false; error: ThreadError };

export class ThreadFailure extends Error {
  readonly thrown: ThreadError | null;
  constructor(message: string, thrown: ThreadError | null = null) {
    super(message);
    this.name = 'ThreadFailure';
    this.thrown = thrown;
  }
}

export function runInThread<T>(
  module: URL,
  data: unknown,
  options: { name: string; timeoutMs: number; transfer?: ArrayBuffer[] },
): Promise<T> {
  const worker = new Worker(module, { name: options.name, workerData: data, transferList: options.transfer ?? [] });
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new ThreadFailure(`took longer than ${options.timeoutMs} ms and was stopped`));
      void worker.terminate();
    }, options.timeoutMs);
    worker.once('message', (reply: ThreadReply<T>) => {
      clearTimeout(timer);
      if (reply.ok) resolve(reply.value);
      else reject(new ThreadFailure(reply.error.message, reply.error));
    });
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(new ThreadFailure(`the thread failed (${error.message})`));
    });
    worker.once('exit', (code) => {
      clearTimeout(timer);
      reject(new ThreadFailure(`the thread ended without an answer (exit code ${code})`));
    });
  });
}

/** In a worker module: runs `work` on the thread's data and posts its one answer (`transfer`: buffers of the value to hand over). */
export async function answerFromThread<T>(
  work: (data: never) => T | Promise<T>,
  transfer: (value: T) => ArrayBuffer[] = () => [],
): Promise<void> {
  try {
    const value = await work(workerData as never);
    parentPort!.postMessage({ ok: true, value } satisfies ThreadReply<T>, transfer(value));
  } catch (error) {
    const thrown = error instanceof Error ? error : new Error(String(error));
    const raw = (thrown as { code?: unknown }).code;
    const code = typeof raw === 'string' ? raw : null;
    parentPort!.postMessage({ ok: false, error: { name: thrown.name, code, message: thrown.message } } satisfies ThreadReply<T>);
  }
}
