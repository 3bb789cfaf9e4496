// Reads an uploaded layout file (uploaded-layout.ts) in a worker thread of its own. A layout file
// may be 16 MiB of XML, which takes more than a second to parse, and a ZIP may bring one for every
// page: on the main thread that held the event loop (every other request, the workers' heartbeats)
// for as long. Its errors come back as the same LayoutErrors.
import { runInThread, ThreadFailure } from '../threads/off-thread.ts';
import {
  type ImageSize,
  LAYOUT_ERRORS,
  type LayoutReadOptions,
  LayoutError,
  type LayoutErrorCode,
  parseUploadedLayout,
  type UploadedLayout,
} from './uploaded-layout.ts';

/** A layout file of the largest size parses in about 1.5 s here; a thread still at work after this is stopped. */
const TIMEOUT_MS = 60_000;
/**
 * Files up to this size are read on the calling thread: about 20 ms at most, where starting a
 * thread costs about 80 (a ZIP of 1 000 pages with small layouts would gain 80 s of intake).
 */
const INLINE_BYTES = 256 * 1024;

export async function readUploadedLayout(
  xml: Uint8Array,
  image: ImageSize,
  signal?: AbortSignal,
  options: LayoutReadOptions = {},
): Promise<UploadedLayout> {
  if (xml.byteLength <= INLINE_BYTES) return parseUploadedLayout(xml, image, options);
  try {
    return await runInThread<UploadedLayout>(
      new URL('./uploaded-layout-worker.ts', import.meta.url),
      { xml, image: { width: image.width, height: image.height }, options },
      { name: 'hwr-layout', timeoutMs: TIMEOUT_MS, signal },
    );
  } catch (error) {
    if (!(error instanceof ThreadFailure)) throw error;
    const code = error.thrown?.code;
    if (code && code in LAYOUT_ERRORS) throw new LayoutError(code as LayoutErrorCode, error.message);
    throw new Error(`reading the layout file failed: ${error.message}`);
  }
}
