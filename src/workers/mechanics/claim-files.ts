// A task claim's own files (src/blobs/blob-keys.ts: a page result or an archive named by its claim)
// and what becomes of one the job did not record.
import type { BlobStore } from '../../blobs/blob-store.ts';

/**
 * Deletes a claim's own file unless it is the one the job recorded: another claim recorded its
 * own, or the job ended first. `recorded` gives the key the job's event names (or null); when it
 * cannot be read the file stays for the job's expiry: a recorded file is never deleted.
 */
export async function dropUnlessRecorded(
  blobs: BlobStore,
  ownKey: string,
  recorded: () => Promise<string | null> | string | null,
): Promise<void> {
  try {
    if ((await recorded()) !== ownKey) await blobs.deletePrefix(ownKey);
  } catch {
    // kept for the expiry
  }
}
