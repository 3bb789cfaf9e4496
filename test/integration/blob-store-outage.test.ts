// The S3 store away or failing is told apart from a failure of the call: a store that refuses
// connections (a real S3-protocol server stopped, test/support/s3-server.ts), answers 503 SlowDown
// after the SDK's own retries, or cuts a body short makes every call reject with
// StorageUnavailableError (workers wait for the store and run the task again; the API answers 503
// storage_unavailable); a 403 or a missing blob is not that; waitForStorage returns once the store
// is back. The failing answers come from a small HTTP server speaking S3's REST error format.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { BlobNotFoundError } from '../../src/blobs/blob-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-blob-store.ts';
import { isStorageUnavailable, StorageUnavailableError, waitForStorage } from '../../src/blobs/storage-unavailable.ts';
import { startTestS3Server } from '../support/s3-server.ts';

const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-blob-outage-'));
after(() => rm(work, { recursive: true, force: true }));
const s3 = await startTestS3Server();
const store = new S3BlobStore({ ...s3.settings('outage'), tempDir: path.join(work, 'tmp') });
after(() => store.close());

const unavailable = (error: unknown) => {
  assert.ok(error instanceof StorageUnavailableError, `${(error as Error)?.name}: ${(error as Error)?.message}`);
  assert.equal(error.code, 'storage_unavailable');
  return true;
};

/** An S3 endpoint answering every request with `status` and S3's XML error `code` (or cutting the body short). */
async function answeringServer(answer: (request: { method?: string }, response: import('node:http').ServerResponse) => void) {
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => answer(request, response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return new S3BlobStore({ ...s3.settings('outage'), endpoint, tempDir: path.join(work, 'tmp') });
}

function s3Error(response: import('node:http').ServerResponse, status: number, code: string): void {
  response.writeHead(status, { 'Content-Type': 'application/xml', 'x-amz-request-id': 'test' });
  response.end(
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message><RequestId>test</RequestId></Error>`,
  );
}

test('the store stopped: every call is storage_unavailable, the start check too; back, a missing blob is not found again', async () => {
  await store.put('kept', 'still here');
  await s3.pause();
  try {
    await assert.rejects(store.get('kept'), unavailable);
    await assert.rejects(store.stream('kept'), unavailable);
    await assert.rejects(store.stat('kept'), unavailable);
    await assert.rejects(store.put('new', 'text'), unavailable);
    await assert.rejects(store.list('any'), unavailable);
    await assert.rejects(store.deletePrefix('any'), unavailable);
    await assert.rejects(
      store.withLocalFile('kept', async () => 'read'),
      unavailable,
    );
    await assert.rejects(store.check(), unavailable);
    const error = await store.get('kept').catch((failure: unknown) => failure);
    assert.match((error as Error).message, /^the object store is unavailable: .*ECONNREFUSED/);
    assert.equal(isStorageUnavailable(error), true);
  } finally {
    await s3.resume();
  }
  assert.equal((await store.get('kept')).toString(), 'still here');
  await assert.rejects(store.get('absent'), BlobNotFoundError);
  assert.equal(await store.stat('absent'), null);
});

test('waitForStorage returns once the store answers again, and false when it does not come back in time', async () => {
  await s3.pause();
  try {
    const started = Date.now();
    assert.equal(await waitForStorage(store, 600), false);
    assert.ok(Date.now() - started >= 250, 'it tried more than once');
    const waiting = waitForStorage(store, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 700));
    await s3.resume();
    assert.equal(await waiting, true);
    await s3.pause();
    const aborted = new AbortController();
    const stopped = waitForStorage(store, 60_000, aborted.signal);
    aborted.abort();
    assert.equal(await stopped, false);
  } finally {
    await s3.resume();
  }
});

test('503 SlowDown and 500 InternalError (after the SDK retried them) are storage_unavailable; 403 AccessDenied is not', async () => {
  let requests = 0;
  const slowDown = await answeringServer((_request, response) => {
    requests += 1;
    s3Error(response, 503, 'SlowDown');
  });
  await assert.rejects(slowDown.get('page.png'), unavailable);
  assert.ok(requests >= 2, `the SDK tried again first (${requests} requests)`);
  slowDown.close();

  const internal = await answeringServer((_request, response) => s3Error(response, 500, 'InternalError'));
  await assert.rejects(internal.put('page.png', 'bytes'), unavailable);
  internal.close();

  const denied = await answeringServer((_request, response) => s3Error(response, 403, 'AccessDenied'));
  await assert.rejects(denied.get('page.png'), (error: Error) => {
    assert.equal(isStorageUnavailable(error), false);
    assert.equal(error.name, 'AccessDenied');
    return true;
  });
  denied.close();
});

test('DeleteObjects answering 200 with a SlowDown per object is storage_unavailable; an AccessDenied per object is not', async () => {
  const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>${body}`;
  const deleting = (code: string) =>
    answeringServer((request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/xml' });
      if (request.method === 'GET')
        response.end(
          xml(
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>hwr-test</Name><Prefix>outage/jobs/j1/</Prefix>' +
              '<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>' +
              '<Contents><Key>outage/jobs/j1/upload.zip</Key><Size>1</Size></Contents></ListBucketResult>',
          ),
        );
      else
        response.end(
          xml(
            `<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Error><Key>outage/jobs/j1</Key><Code>${code}</Code>` +
              `<Message>${code}</Message></Error></DeleteResult>`,
          ),
        );
    });
  const slow = await deleting('SlowDown');
  await assert.rejects(slow.deletePrefix('jobs/j1'), unavailable);
  slow.close();
  const denied = await deleting('AccessDenied');
  await assert.rejects(denied.deletePrefix('jobs/j1'), (error: Error) => {
    assert.equal(isStorageUnavailable(error), false);
    assert.match(error.message, /could not delete 1 object\(s\) under jobs\/j1: AccessDenied/);
    return true;
  });
  denied.close();
});

test('a body cut short by a lost connection is storage_unavailable, read whole or streamed', async () => {
  const cut = await answeringServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': '100000' });
    response.write(Buffer.alloc(1000));
    setTimeout(() => response.socket?.destroy(), 20);
  });
  await assert.rejects(cut.get('page.png'), unavailable);
  await assert.rejects(async () => {
    for await (const _chunk of await cut.stream('page.png'));
  }, unavailable);
  await assert.rejects(
    cut.withLocalFile('page.png', async () => 'read'),
    unavailable,
  );
  cut.close();
});
