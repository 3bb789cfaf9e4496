// The page image correction's `best` tier may send, read from the blob store when it asks. A store
// outage while reading it is the page task's to ride out (the task runs again), not a reason to
// correct the page blind; a missing or unreadable image leaves correction to the text alone.
import { isStorageUnavailable } from '../blobs/storage-unavailable.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { PageImageSource } from '../recognition/correction/corrector.ts';

export function storedPageImage(blobs: BlobStore, key: string): PageImageSource {
  return { key, read: () => blobs.get(key), ridesOut: isStorageUnavailable };
}
