// The thread one JPEG 2000 page is decoded in (jpeg2000-decode.ts starts it): gets the file's
// bytes in workerData, answers with the samples (by transfer) or the error, and ends.
import { parentPort, workerData } from 'node:worker_threads';
import { decodeInThisThread, Jpeg2000DecodeError } from './jpeg2000-codec.ts';

export type Jpeg2000WorkerReply =
  | { ok: true; decoded: Awaited<ReturnType<typeof decodeInThisThread>> }
  | { ok: false; decodeError: boolean; message: string };

try {
  const decoded = await decodeInThisThread(workerData as Uint8Array);
  parentPort!.postMessage({ ok: true, decoded } satisfies Jpeg2000WorkerReply, [decoded.data.buffer as ArrayBuffer]);
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  parentPort!.postMessage({ ok: false, decodeError: error instanceof Jpeg2000DecodeError, message } satisfies Jpeg2000WorkerReply);
}
