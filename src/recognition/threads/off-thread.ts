// Work that would hold the event loop (WebAssembly decoding, parsing a large uploaded XML file)
// runs in a worker thread of its own, one per call: `runInThread` starts the worker module with
// `data` and waits for its one answer, which the module gives with `answerFromThread`. A thread
// that has not answered in `timeoutMs`, or whose `signal` aborts (a cancelled job, a task handed
// back at shutdown), is stopped. Errors come back as their name, code and
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
  options: { name: string; timeoutMs: number; transfer?: ArrayBuffer[]; signal?: AbortSignal },
): Promise<T> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const worker = new Worker(module, { name: options.name, workerData: data, transferList: options.transfer ?? [] });
  return new Promise<T>((resolve, reject) => {
    const end = (settle: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    const stop = (reason: unknown) =>
      end(() => {
        reject(reason);
        void worker.terminate();
      });
    const onAbort = () => stop(signal?.reason);
    const timer = setTimeout(() => stop(new ThreadFailure(`took longer than ${options.timeoutMs} ms and was stopped`)), options.timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (reply: ThreadReply<T>) =>
      end(() => (reply.ok ? resolve(reply.value) : reject(new ThreadFailure(reply.error.message, reply.error)))),
    );
    worker.once('error', (error) => {
      const code = (error as { code?: unknown }).code;
      end(() =>
        reject(
          new ThreadFailure(`the thread failed (${error.message})`, {
            name: error.name,
            code: typeof code === 'string' ? code : null,
            message: error.message,
          }),
        ),
      );
    });
    worker.once('exit', (code) => end(() => reject(new ThreadFailure(`the thread ended without an answer (exit code ${code})`))));
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
