// Decodes a JPEG 2000 page in a worker thread of its own (jpeg2000-worker.ts, OpenJPEG in
// WebAssembly: jpeg2000-codec.ts). WebAssembly runs on the thread that calls it, and a large page
// takes seconds (200 ms a megapixel), which on the main thread would hold the event loop: HTTP
// requests, pg-boss, the page's heartbeat. A thread a page also gives its memory back at once
// when it ends (the decoder's grows to about 17 bytes a pixel and never shrinks), and a decode
// that never ends (a codestream made to loop) is stopped after its time, not left hanging the job.
import { Worker } from 'node:worker_threads';
import { type DecodedJpeg2000, Jpeg2000DecodeError } from './jpeg2000-codec.ts';
import type { Jpeg2000WorkerReply } from './jpeg2000-worker.ts';

export { type DecodedJpeg2000, Jpeg2000DecodeError } from './jpeg2000-codec.ts';

/** The longest a decode may take by default; open-image.ts gives each page time by its size. */
const DEFAULT_TIMEOUT_MS = 120_000;

export function decodeJpeg2000(bytes: Uint8Array, options: { timeoutMs?: number } = {}): Promise<DecodedJpeg2000> {
  // A copy of its own (a Buffer may be a view of a shared pool), handed over without another copy.
  const copy = new Uint8Array(bytes);
  const worker = new Worker(new URL('./jpeg2000-worker.ts', import.meta.url), {
    name: 'hwr-jpeg2000',
    workerData: copy,
    transferList: [copy.buffer as ArrayBuffer],
  });
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise<DecodedJpeg2000>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Jpeg2000DecodeError(`decoding took longer than ${timeoutMs} ms and was stopped`));
      void worker.terminate();
    }, timeoutMs);
    worker.once('message', (reply: Jpeg2000WorkerReply) => {
      clearTimeout(timer);
      if (reply.ok) resolve(reply.decoded);
      else reject(reply.decodeError ? new Jpeg2000DecodeError(reply.message) : new Error(reply.message));
    });
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(new Jpeg2000DecodeError(`the decoding thread failed (${error.message})`));
    });
    worker.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Jpeg2000DecodeError(`the decoding thread ended without an answer (exit code ${code})`));
    });
  });
}
