// Blobs as objects in an S3-compatible bucket (AWS S3, MinIO, Ceph radosgw, s3rver), under an
// optional key prefix. Writes stream through lib-storage's Upload: one PutObject for a small
// blob, a multipart upload in PART_SIZE parts for a larger one, so a blob is never held whole
// in memory (at most QUEUE_SIZE parts are). An object appears only once its upload completes,
// so readers never see a partial blob; a failed upload is aborted and leaves nothing.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type _Object,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { assertSafeKey, BlobNotFoundError, type BlobEntry, type BlobInfo, type BlobStore, type PresignOptions } from './blob-store.ts';
import { StorageUnavailableError } from './storage-unavailable.ts';

/** Multipart part size (S3's minimum is 5 MiB) and parts in flight: at most 32 MiB buffered per upload. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;

export interface S3BlobStoreOptions {
  bucket: string;
  /** Prepended to every key (`hwr/` → `hwr/jobs/<id>/…`); empty for the bucket's root. */
  prefix: string;
  /** An S3-compatible server's URL (MinIO, radosgw); null: AWS S3 of the region. */
  endpoint: string | null;
  /** The endpoint clients reach for presigned URLs, when it differs from `endpoint` (e.g. inside docker compose). */
  publicEndpoint?: string | null;
  region: string;
  /** Path-style addressing (`endpoint/bucket/key`), which most self-hosted servers need. */
  forcePathStyle: boolean;
  /** Static credentials; null: the AWS SDK's default chain (environment, profile, instance or pod role). */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
  /** Where withLocalFile downloads to (a directory of this machine, e.g. DATA_DIR/tmp/blobs). */
  tempDir: string;
}

export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  readonly prefix: string;
  readonly client: S3Client;
  private readonly presignClient: S3Client;
  private readonly tempDir: string;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = normalizePrefix(options.prefix);
    this.tempDir = options.tempDir;
    const clientConfig = (endpoint: string | null): S3ClientConfig => ({
      region: options.region,
      forcePathStyle: options.forcePathStyle,
      ...(endpoint ? { endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      // Checksums only where S3 requires them: many S3-compatible servers reject or mishandle the
      // SDK's default trailing CRC checksums on every upload.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A store that never answers fails the call (and the task is retried) instead of hanging it:
      // 10 s to connect, 120 s of silence on an open request.
      requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
    });
    this.client = new S3Client(clientConfig(options.endpoint));
    this.presignClient =
      options.publicEndpoint && options.publicEndpoint !== options.endpoint
        ? new S3Client(clientConfig(options.publicEndpoint))
        : this.client;
  }

  /** The object key of a blob key. */
  objectKey(key: string): string {
    assertSafeKey(key);
    return this.prefix + key;
  }

  async put(key: string, body: Buffer | string | Readable): Promise<BlobInfo> {
    const objectKey = this.objectKey(key);
    let bytes = 0;
    let source: Buffer | Readable;
    let sourceError: Error | null = null;
    if (body instanceof Readable) {
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          bytes += chunk.length;
          callback(null, chunk);
        },
      });
      body.on('error', (error) => {
        sourceError ??= error;
        counter.destroy(error);
      });
      source = body.pipe(counter);
    } else {
      source = typeof body === 'string' ? Buffer.from(body) : body;
      bytes = source.length;
    }
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: objectKey, Body: source },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      // As stream.pipeline does for the filesystem store: the source is not read any further.
      if (source instanceof Readable) source.destroy();
      if (body instanceof Readable) body.destroy();
      // The source's own failure is the cause; a failed abort of the multipart upload (some
      // servers lack AbortMultipartUpload) would otherwise hide it. Parts an abort could not
      // remove are left to the bucket's lifecycle rule (docs/deployment.md).
      throw sourceError ?? unavailableIfPassing(error);
    }
    return { bytes };
  }

  async moveIn(key: string, file: string): Promise<BlobInfo> {
    const info = await this.put(key, createReadStream(file));
    await rm(file, { force: true });
    return info;
  }

  async get(key: string): Promise<Buffer> {
    const body = await this.getBody(key);
    return Buffer.from(await storageCall(() => body.transformToByteArray()));
  }

  async stream(key: string): Promise<Readable> {
    const body = (await this.getBody(key)) as unknown as Readable;
    // A connection lost mid-body is the store's failure, not the blob's.
    const guarded = new PassThrough();
    body.on('error', (error) => guarded.destroy(unavailableIfPassing(error) as Error));
    guarded.on('close', () => body.destroy());
    return body.pipe(guarded);
  }

  private async getBody(key: string) {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      if (!answer.Body) throw new BlobNotFoundError(key);
      return answer.Body;
    } catch (error) {
      throw isNotFound(error) ? new BlobNotFoundError(key) : unavailableIfPassing(error);
    }
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const head = await this.head(key);
    return head ? { bytes: head.bytes } : null;
  }

  private async head(key: string): Promise<{ bytes: number; lastModified: Date | null } | null> {
    try {
      const answer = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return { bytes: answer.ContentLength ?? 0, lastModified: answer.LastModified ?? null };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw unavailableIfPassing(error);
    }
  }

  async list(prefix: string): Promise<string[]> {
    const base = `${this.objectKey(prefix)}/`;
    const names = new Set<string>();
    let token: string | undefined;
    do {
      const page = await storageCall(() =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, Delimiter: '/', ContinuationToken: token })),
      );
      for (const object of page.Contents ?? []) if (object.Key) names.add(object.Key.slice(base.length));
      for (const common of page.CommonPrefixes ?? []) if (common.Prefix) names.add(common.Prefix.slice(base.length).replace(/\/$/, ''));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    names.delete('');
    return [...names];
  }

  async *walk(prefix: string): AsyncGenerator<BlobEntry> {
    const own = await this.head(prefix);
    if (own) yield { key: prefix, bytes: own.bytes };
    for await (const object of this.objectsUnder(prefix)) {
      if (object.Key) yield { key: object.Key.slice(this.prefix.length), bytes: object.Size ?? 0 };
    }
  }

  async lastModified(prefix: string): Promise<Date | null> {
    let newest = (await this.head(prefix))?.lastModified ?? null;
    for await (const object of this.objectsUnder(prefix)) {
      if (object.LastModified && (!newest || object.LastModified > newest)) newest = object.LastModified;
    }
    return newest;
  }

  async deletePrefix(prefix: string): Promise<void> {
    let batch: string[] = [this.objectKey(prefix)];
    const flush = async () => {
      if (batch.length === 0) return;
      const answer = await storageCall(() =>
        this.client.send(
          new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
        ),
      );
      const failed = (answer.Errors ?? []).filter((error) => error.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        const message = `could not delete ${failed.length} object(s) under ${prefix}: ${failed[0].Code} ${failed[0].Message ?? ''}`;
        // Per-object errors in a 200 answer: the store's passing ones (SlowDown, InternalError) are its outage.
        throw failed.every((error) => PASSING_NAMES.has(error.Code ?? ''))
          ? new StorageUnavailableError(`the object store is unavailable: ${message}`)
          : new Error(message);
      }
      batch = [];
    };
    for await (const object of this.objectsUnder(prefix)) {
      if (object.Key) batch.push(object.Key);
      if (batch.length === 1000) await flush();
    }
    await flush();
  }

  /** Every object whose key starts with `prefix/`, page by page. */
  private async *objectsUnder(prefix: string): AsyncGenerator<_Object> {
    const base = `${this.objectKey(prefix)}/`;
    let token: string | undefined;
    do {
      const page = await storageCall(() =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, ContinuationToken: token })),
      );
      yield* page.Contents ?? [];
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async withLocalFile<T>(key: string, use: (file: string) => Promise<T>): Promise<T> {
    const body = await this.stream(key);
    await mkdir(this.tempDir, { recursive: true });
    const dir = await mkdtemp(path.join(this.tempDir, 'blob-'));
    try {
      const file = path.join(dir, path.posix.basename(key));
      await pipeline(body, createWriteStream(file));
      return await use(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Removes temporary downloads that a process killed inside withLocalFile left behind: those
   * untouched for `olderThanMs` (a live one lasts seconds). Called at start; safe beside other
   * processes sharing the directory.
   */
  async removeStaleDownloads(olderThanMs = 3600_000, now = Date.now()): Promise<number> {
    let entries: string[];
    try {
      entries = await readdir(this.tempDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    let removed = 0;
    for (const entry of entries.filter((name) => name.startsWith('blob-'))) {
      const dir = path.join(this.tempDir, entry);
      const info = await stat(dir).catch(() => null);
      if (info && now - info.mtimeMs > olderThanMs) {
        await rm(dir, { recursive: true, force: true });
        removed++;
      }
    }
    return removed;
  }

  async presignedGetUrl(key: string, options: PresignOptions): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.objectKey(key),
      ...(options.filename ? { ResponseContentDisposition: `attachment; filename="${options.filename.replace(/["\\\r\n]/g, '_')}"` } : {}),
      ...(options.contentType ? { ResponseContentType: options.contentType } : {}),
    });
    return getSignedUrl(this.presignClient, command, { expiresIn: options.expiresInSeconds });
  }

  /**
   * Checks that the bucket answers (at start, so a wrong bucket, endpoint or credentials fail the
   * start, not the first upload): a GET of a key that does not exist must answer NoSuchKey, which
   * needs the bucket, valid credentials and read and list rights under the prefix. (A HEAD
   * cannot tell a missing bucket from a missing key; a one-key listing would work too, but the
   * test server cannot page listings on Node 24.)
   */
  async check(): Promise<void> {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: `${this.prefix}.hwr-start-check/absent` }));
      (answer.Body as Readable | undefined)?.destroy?.();
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return;
      throw unavailableIfPassing(error);
    }
  }

  close(): void {
    this.client.destroy();
    if (this.presignClient !== this.client) this.presignClient.destroy();
  }
}

function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  assertSafeKey(trimmed);
  return `${trimmed}/`;
}

function isNotFound(error: unknown): boolean {
  const candidate = error as { name?: string; Code?: string };
  return candidate?.name === 'NoSuchKey' || candidate?.name === 'NotFound' || candidate?.Code === 'NoSuchKey';
}

/** Socket and DNS failures under a call: the store (or the way to it) is away for now. */
const PASSING_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
]);
/**
 * The SDK's timeouts (connectionTimeout, requestTimeout), S3's answers that ask for a retry later,
 * and credentials that could not be fetched (an instance or container metadata endpoint timing out).
 */
const PASSING_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'Throttling',
  'CredentialsProviderError',
]);

/**
 * A failure of the store rather than of the call (docs/reliability.md): the connection refused,
 * reset or silent, a name that did not resolve, a 5xx or 503 SlowDown after the SDK's own retries,
 * as StorageUnavailableError; any other error as it is.
 */
function unavailableIfPassing(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof StorageUnavailableError) return error;
  const { code, $metadata } = error as { code?: unknown; $metadata?: { httpStatusCode?: number } };
  const status = $metadata?.httpStatusCode;
  const passing =
    (typeof code === 'string' && PASSING_CODES.has(code)) || PASSING_NAMES.has(error.name) || (typeof status === 'number' && status >= 500);
  return passing ? new StorageUnavailableError(`the object store is unavailable: ${error.message || error.name}`, { cause: error }) : error;
}

async function storageCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw unavailableIfPassing(error);
  }
}
