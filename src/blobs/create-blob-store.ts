// The blob store a process uses, from its configuration (BLOB_STORE).
import path from 'node:path';
import type { Config } from '../platform/config.ts';
import type { BlobStore } from './blob-store.ts';
import { FilesystemBlobStore } from './filesystem-blob-store.ts';
import { S3BlobStore } from './s3-blob-store.ts';

export interface OpenedBlobStore {
  blobs: BlobStore;
  close(): Promise<void>;
}

/** Opens the configured store; an S3 bucket is checked to answer, so a wrong setting fails the start. */
export async function openBlobStore(config: Config): Promise<OpenedBlobStore> {
  const { blobs: settings } = config;
  if (settings.store === 'filesystem' || !settings.s3) {
    return { blobs: new FilesystemBlobStore(path.join(config.dataDir, 'blobs')), close: async () => {} };
  }
  const s3 = settings.s3;
  const store = new S3BlobStore({ ...s3, tempDir: path.join(config.dataDir, 'tmp', 'blobs') });
  try {
    await store.check();
  } catch (error) {
    store.close();
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new Error(`could not reach the S3 bucket ${s3.bucket} at ${s3.endpoint ?? `AWS S3 (${s3.region})`}: ${reason}`, { cause: error });
  }
  await store.removeStaleDownloads().catch(() => 0);
  return { blobs: store, close: async () => store.close() };
}
