// The blob store could not be reached or failed under a call (an object store restarting, a
// network cut, a throttling answer): says nothing about the blob asked for, and is worth trying
// again once the store answers. The S3 store raises it for such failures; the filesystem store
// never does (a local disk's errors are not passing). Workers wait for the store and run the task
// again (workers/mechanics/riding-out-outages.ts); the API answers 503 `storage_unavailable`.
import type { BlobStore } from './blob-store.ts';

export class StorageUnavailableError extends Error {
  readonly code = 'storage_unavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageUnavailableError';
  }
}

export function isStorageUnavailable(error: unknown): error is StorageUnavailableError {
  return error instanceof StorageUnavailableError;
}

/**
 * Waits until the store answers its check, trying every 250 ms (up to 2 s apart), for at most
 * `maxWaitMs`; false when it did not come back in time or `signal` aborted. A store without a
 * check (the filesystem) answers at once.
 */
export async function waitForStorage(blobs: BlobStore, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
  if (!blobs.check) return true;
  const deadline = Date.now() + maxWaitMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    if (signal?.aborted) return false;
    try {
      await blobs.check();
      return true;
    } catch (error) {
      if (!isStorageUnavailable(error) || Date.now() + delay > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
