// A real S3-protocol server for tests, started the way the embedded PostgreSQL is: s3rver (the
// npm S3 emulator: HTTP, SigV4 signatures, multipart uploads, ListObjectsV2, DeleteObjects,
// presigned URLs), listening on 127.0.0.1 on a free port, its objects in a temporary directory;
// one per test file (it starts in well under a second), stopped and deleted after the file; the
// soak's --s3 runs one the same way.
// docs/architecture.md says why s3rver and not Ceph's radosgw.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import S3rver from 's3rver';
import type { S3Settings } from '../../src/platform/config.ts';

export const TEST_S3_BUCKET = 'hwr-test';
/** s3rver's fixed credentials. */
export const TEST_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  /** Settings for S3BlobStore / Config['blobs'].s3 with the given key prefix. */
  settings(prefix?: string): S3Settings;
  /** The environment a child process needs to use it (BLOB_STORE=s3 and the rest). */
  env(prefix?: string): Record<string, string>;
  /** Takes the server away (connections refused), keeping its objects, as a restart of the store does. */
  pause(): Promise<void>;
  /** Brings a paused server back on the same port, with the same objects. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a server with the bucket `hwr-test`; it stops after the test file (or on stop()). */
export async function startTestS3Server(): Promise<TestS3Server> {
  const server = await runS3Server();
  after(server.stop);
  return server;
}

/** Starts a server with the bucket `hwr-test` until stop(), outside a test file too (`npm run bench:soak -- --s3`). */
export async function runS3Server(): Promise<TestS3Server> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'hwr-s3-'));
  const serve = (port: number) =>
    new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: [{ name: TEST_S3_BUCKET }] });
  let server: S3rver | null = serve(0);
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const pause = async () => {
    const running = server;
    server = null;
    await running?.close();
  };
  const resume = async () => {
    if (server) return;
    server = serve(port);
    await server.run();
  };
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      await pause();
      await rm(directory, { recursive: true, force: true });
    })());
  return {
    endpoint,
    bucket: TEST_S3_BUCKET,
    settings: (prefix = '') => ({
      bucket: TEST_S3_BUCKET,
      prefix,
      endpoint,
      publicEndpoint: null,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: TEST_S3_CREDENTIALS,
    }),
    env: (prefix = '') => ({
      BLOB_STORE: 's3',
      S3_BUCKET: TEST_S3_BUCKET,
      S3_PREFIX: prefix,
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
      S3_FORCE_PATH_STYLE: '1',
      AWS_ACCESS_KEY_ID: TEST_S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_S3_CREDENTIALS.secretAccessKey,
    }),
    pause,
    resume,
    stop,
  };
}
