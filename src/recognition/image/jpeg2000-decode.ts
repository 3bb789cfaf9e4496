// Decodes a JPEG 2000 page in a worker thread of its own (jpeg2000-worker.ts, OpenJPEG in
// WebAssembly: jpeg2000-codec.ts). WebAssembly runs on the thread that calls it, and a large page
// takes seconds, which on the main thread would hold the event loop: HTTP requests, pg-boss, the
// page's heartbeat. A thread a page also gives its memory back at once when it ends (the
// decoder's grows to about 17 bytes a pixel and never shrinks), and a decode that never ends (a
// codestream made to loop) is stopped after its time, not left hanging the job.
import { runInThread, ThreadFailure } from '../threads/off-thread.ts';
import { type DecodedJpeg2000, Jpeg2000DecodeError } from './jpeg2000-codec.ts';

export { type DecodedJpeg2000, Jpeg2000DecodeError } from './jpeg2000-codec.ts';

/** The longest a decode may take by default; open-image.ts gives each page time by its size. */
const DEFAULT_TIMEOUT_MS = 120_000;

export async function decodeJpeg2000(
  bytes: Uint8Array,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<DecodedJpeg2000> {
  // A copy of its own (a Buffer may be a view of a shared pool), handed over without another copy.
  const copy = new Uint8Array(bytes);
  try {
    return await runInThread<DecodedJpeg2000>(new URL('./jpeg2000-worker.ts', import.meta.url), copy, {
      name: 'hwr-jpeg2000',
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      transfer: [copy.buffer as ArrayBuffer],
      signal: options.signal,
    });
  } catch (error) {
    if (!(error instanceof ThreadFailure)) throw error;
    if (error.thrown && error.thrown.name !== 'Jpeg2000DecodeError')
      throw Object.assign(new Error(error.message, { cause: error }), { code: error.thrown.code ?? undefined });
    throw new Jpeg2000DecodeError(error.thrown ? error.message : `decoding ${error.message}`);
  }
}
