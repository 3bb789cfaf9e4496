// Blob storage for uploaded scans, page images, page results and result archives.
// Keys are relative slash-separated paths such as `jobs/<job_id>/result.zip`.
import type { Readable } from 'node:stream';

export interface BlobInfo {
  bytes: number;
}

export interface BlobEntry {
  key: string;
  bytes: number;
}

export interface BlobStore {
  /** Writes a blob atomically (readers never see a partial blob). */
  put(key: string, body: Buffer | string | Readable): Promise<BlobInfo>;
  /** Takes a local file over as a blob (moved when it can be, else copied and removed). */
  moveIn(key: string, file: string): Promise<BlobInfo>;
  get(key: string): Promise<Buffer>;
  /** Streams a blob; rejects with BlobNotFoundError when absent. */
  stream(key: string): Promise<Readable>;
  stat(key: string): Promise<BlobInfo | null>;
  /** Deletes every blob whose key starts with `prefix/` (or equals it). */
  deletePrefix(prefix: string): Promise<void>;
  /** Names directly under `prefix/` (blobs and sub-prefixes), in no order; empty when there are none. */
  list(prefix: string): Promise<string[]>;
  /** Every blob whose key starts with `prefix/` (or equals it), with its size, in no order. */
  walk(prefix: string): AsyncIterable<BlobEntry>;
  /** The newest modification time of anything under `prefix/` (or of the blob `prefix`); null when absent. */
  lastModified(prefix: string): Promise<Date | null>;
  /**
   * Runs `use` with a local file holding the blob, for tools that need a path (e.g. sharp's
   * header reader). The file is valid only until `use` settles: the filesystem store passes its
   * own file, an object store a temporary download that is removed afterwards. Rejects with
   * BlobNotFoundError when absent.
   */
  withLocalFile<T>(key: string, use: (file: string) => Promise<T>): Promise<T>;
  /**
   * A short-lived URL a client can GET the blob from directly, where the store has one (object
   * storage: a presigned URL); absent on stores that cannot hand out URLs (the filesystem).
   */
  presignedGetUrl?(key: string, options: PresignOptions): Promise<string>;
  /**
   * Removes the partial files of writes that stopped (a process killed mid-write) under
   * `prefix/`, untouched since `before`; returns their keys. Only stores that keep partial writes
   * where blobs live have it (the filesystem's `<key>.<uuid>.tmp`); an object store's incomplete
   * multipart uploads are the bucket's lifecycle rule's to abort (docs/deployment.md).
   */
  removeStalledWrites?(prefix: string, before: Date): Promise<string[]>;
  /**
   * Checks that the store answers (a remote store's bucket, credentials and rights), rejecting
   * with StorageUnavailableError while it cannot be reached; absent where there is nothing remote
   * to check (the filesystem).
   */
  check?(): Promise<void>;
}

export interface PresignOptions {
  expiresInSeconds: number;
  /** Sent back as the download's Content-Disposition attachment file name. */
  filename?: string;
  /** Sent back as the download's Content-Type. */
  contentType?: string;
}

export class BlobNotFoundError extends Error {
  readonly key: string;
  constructor(key: string) {
    super(`blob not found: ${key}`);
    this.name = 'BlobNotFoundError';
    this.key = key;
  }
}

export function assertSafeKey(key: string): void {
  if (key === '' || key.startsWith('/') || key.split('/').some((part) => part === '..' || part === '.' || part === '')) {
    throw new Error(`invalid blob key: ${JSON.stringify(key)}`);
  }
}
