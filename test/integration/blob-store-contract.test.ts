// The BlobStore contract, run against both stores: the filesystem (DATA_DIR/blobs) and S3
// (lib-storage uploads, ListObjectsV2, DeleteObjects, presigned URLs) on a real S3-protocol
// server started here (test/support/s3-server.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { BlobNotFoundError, type BlobStore } from '../../src/blobs/blob-store.ts';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-blob-store.ts';
import { startTestS3Server } from '../support/s3-server.ts';

const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-blob-contract-'));
after(() => rm(work, { recursive: true, force: true }));
const s3 = await startTestS3Server();

const stores: Record<string, () => BlobStore> = {
  filesystem: () => new FilesystemBlobStore(path.join(work, 'fs')),
  s3: () => new S3BlobStore({ ...s3.settings('deploy/a'), tempDir: path.join(work, 's3-tmp') }),
};

const MiB = 1024 * 1024;

/** `total` bytes of a repeatable pattern, produced lazily in 64 KiB chunks (never one buffer). */
function patternStream(total: number, failAt?: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (failAt !== undefined && sent >= failAt) {
        this.destroy(new Error('the source broke'));
        return;
      }
      if (sent >= total) {
        this.push(null);
        return;
      }
      const size = Math.min(64 * 1024, total - sent);
      const chunk = Buffer.alloc(size);
      for (let i = 0; i < size; i++) chunk[i] = (sent + i) % 251;
      sent += size;
      this.push(chunk);
    },
  });
}

async function sha256Of(stream: Readable): Promise<{ hash: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { hash: hash.digest('hex'), bytes };
}

for (const [name, open] of Object.entries(stores)) {
  describe(`${name} blob store`, () => {
    const blobs = open();

    test('put (buffer, string, stream), get, stream and stat; absent blobs', async () => {
      assert.deepEqual(await blobs.put('jobs/j1/pages/0001.png', Buffer.from('page one')), { bytes: 8 });
      assert.deepEqual(await blobs.put('jobs/j1/results/0001.json', '{"ü":1}'), { bytes: Buffer.byteLength('{"ü":1}') });
      assert.deepEqual(await blobs.put('jobs/j1/upload.zip', Readable.from([Buffer.from('zip '), Buffer.from('bytes')])), { bytes: 9 });
      assert.equal((await blobs.get('jobs/j1/pages/0001.png')).toString(), 'page one');
      assert.equal((await blobs.get('jobs/j1/results/0001.json')).toString(), '{"ü":1}');
      let streamed = '';
      for await (const chunk of await blobs.stream('jobs/j1/upload.zip')) streamed += String(chunk);
      assert.equal(streamed, 'zip bytes');
      assert.deepEqual(await blobs.stat('jobs/j1/upload.zip'), { bytes: 9 });
      assert.equal(await blobs.stat('jobs/j1/missing.zip'), null);
      assert.equal(await blobs.stat('jobs/j1'), null, 'a prefix is not a blob');
      await assert.rejects(blobs.get('jobs/j1/missing.zip'), BlobNotFoundError);
      await assert.rejects(blobs.stream('jobs/j1/missing.zip'), BlobNotFoundError);
      // Overwrite replaces.
      await blobs.put('jobs/j1/pages/0001.png', Buffer.from('page one, again'));
      assert.equal((await blobs.get('jobs/j1/pages/0001.png')).toString(), 'page one, again');
      await assert.rejects(async () => blobs.put('../escape', 'x'), /invalid blob key/);
      await assert.rejects(async () => blobs.put('jobs//x', 'x'), /invalid blob key/);
    });

    test('a 21 MiB stream goes in and comes back whole (multipart on S3); a source that breaks leaves nothing', async () => {
      const total = 21 * MiB + 123;
      const commands: string[] = [];
      if (blobs instanceof S3BlobStore) {
        blobs.client.middlewareStack.add(
          (next, context) => async (args) => {
            commands.push(String(context.commandName));
            return next(args);
          },
          { step: 'initialize', name: 'recordCommands' },
        );
      }
      const info = await blobs.put('jobs/big/result.zip', patternStream(total));
      assert.equal(info.bytes, total);
      assert.deepEqual(await blobs.stat('jobs/big/result.zip'), { bytes: total });
      assert.deepEqual(await sha256Of(await blobs.stream('jobs/big/result.zip')), await sha256Of(patternStream(total)));
      if (blobs instanceof S3BlobStore) {
        assert.deepEqual(
          commands.filter((command) => /Multipart|UploadPart|PutObject/.test(command)),
          ['CreateMultipartUploadCommand', 'UploadPartCommand', 'UploadPartCommand', 'UploadPartCommand', 'CompleteMultipartUploadCommand'],
          'uploaded in three 8 MiB parts',
        );
        blobs.client.middlewareStack.remove('recordCommands');
      }
      await assert.rejects(blobs.put('jobs/big/broken.zip', patternStream(total, 10 * MiB)), /the source broke/);
      assert.equal(await blobs.stat('jobs/big/broken.zip'), null);
      // A broken rewrite keeps the blob that was there.
      await assert.rejects(blobs.put('jobs/big/result.zip', patternStream(total, MiB)), /the source broke/);
      assert.deepEqual(await blobs.stat('jobs/big/result.zip'), { bytes: total });
    });

    test('moveIn takes a local file over', async () => {
      const file = path.join(work, `${name}-upload.zip`);
      await writeFile(file, 'uploaded');
      assert.deepEqual(await blobs.moveIn('jobs/j2/upload.zip', file), { bytes: 8 });
      assert.equal(existsSync(file), false, 'the local file is gone');
      assert.equal((await blobs.get('jobs/j2/upload.zip')).toString(), 'uploaded');
    });

    test('list names what is directly under a prefix; lastModified is the newest below it', async () => {
      await blobs.put('tree/a/pages/0001.png', 'p1');
      await blobs.put('tree/a/pages/0002.png', 'p2');
      await blobs.put('tree/a/upload.zip', 'z');
      await blobs.put('tree/ab/upload.zip', 'z');
      assert.deepEqual((await blobs.list('tree')).sort(), ['a', 'ab']);
      assert.deepEqual((await blobs.list('tree/a')).sort(), ['pages', 'upload.zip']);
      assert.deepEqual((await blobs.list('tree/a/pages')).sort(), ['0001.png', '0002.png']);
      assert.deepEqual(await blobs.list('tree/none'), []);
      const before = Date.now() - 5_000;
      const modified = await blobs.lastModified('tree/a');
      assert.ok(modified && modified.getTime() >= before && modified.getTime() <= Date.now() + 5_000, String(modified));
      assert.ok(await blobs.lastModified('tree/a/upload.zip'), 'a blob has a modification time');
      assert.equal(await blobs.lastModified('tree/none'), null);
    });

    test('walk yields every blob under a prefix with its size, and the blob itself', async () => {
      await blobs.put('walk/a/pages/0001.png', 'p1');
      await blobs.put('walk/a/upload.zip', 'zip!');
      await blobs.put('walk/ab/upload.zip', 'z');
      const under = async (prefix: string) => {
        const found = [];
        for await (const entry of blobs.walk(prefix)) found.push(entry);
        return found.sort((a, b) => a.key.localeCompare(b.key));
      };
      assert.deepEqual(await under('walk/a'), [
        { key: 'walk/a/pages/0001.png', bytes: 2 },
        { key: 'walk/a/upload.zip', bytes: 4 },
      ]);
      assert.deepEqual(await under('walk/a/upload.zip'), [{ key: 'walk/a/upload.zip', bytes: 4 }]);
      assert.deepEqual(await under('walk/none'), []);
    });

    test('deletePrefix removes the prefix and everything below it, and nothing beside it', async () => {
      await blobs.put('del/a/pages/0001.png', 'p1');
      await blobs.put('del/a/upload.zip', 'z');
      await blobs.put('del/ab/upload.zip', 'z');
      await blobs.put('del/a.zip', 'z');
      await blobs.deletePrefix('del/a');
      assert.deepEqual(await blobs.list('del/a'), []);
      assert.equal(await blobs.stat('del/a/upload.zip'), null);
      assert.deepEqual(await blobs.stat('del/ab/upload.zip'), { bytes: 1 });
      assert.deepEqual(await blobs.stat('del/a.zip'), { bytes: 1 });
      await blobs.deletePrefix('del/a.zip'); // one blob
      assert.equal(await blobs.stat('del/a.zip'), null);
      await blobs.deletePrefix('del/none'); // nothing there: no error
    });

    test('withLocalFile hands a readable file for the call only', async () => {
      await blobs.put('local/page.png', 'pixels');
      let seen = '';
      const answer = await blobs.withLocalFile('local/page.png', async (file) => {
        seen = file;
        return (await readFile(file)).toString();
      });
      assert.equal(answer, 'pixels');
      if (blobs instanceof S3BlobStore) assert.equal(existsSync(seen), false, 'the temporary download is removed');
      await assert.rejects(
        blobs.withLocalFile('local/missing.png', async () => 1),
        BlobNotFoundError,
      );
      await assert.rejects(
        blobs.withLocalFile('local/page.png', async () => {
          throw new Error('tool failed');
        }),
        /tool failed/,
      );
    });
  });
}

describe('S3 specifics', () => {
  const store = stores.s3() as S3BlobStore;

  test('a presigned URL serves the blob to a client without credentials, as an attachment', async () => {
    await store.put('jobs/j3/result.zip', 'archive bytes');
    const url = await store.presignedGetUrl('jobs/j3/result.zip', {
      expiresInSeconds: 60,
      filename: 'j3.zip',
      contentType: 'application/zip',
    });
    assert.match(url, /X-Amz-Signature=/);
    assert.match(url, /\/hwr-test\/deploy\/a\/jobs\/j3\/result\.zip\?/, 'path-style, under the prefix');
    const answer = await fetch(url);
    assert.equal(answer.status, 200);
    assert.equal(await answer.text(), 'archive bytes');
    assert.equal(answer.headers.get('content-disposition'), 'attachment; filename="j3.zip"');
    assert.equal(answer.headers.get('content-type'), 'application/zip');
    assert.match(url, /X-Amz-Expires=60&/);
    // (s3rver does not check query signatures; a real server refuses a tampered or expired URL.)
  });

  test('S3_PUBLIC_ENDPOINT: presigned URLs name the address clients reach, the store keeps its own', async () => {
    const behindProxy = new S3BlobStore({
      ...s3.settings('deploy/a'),
      publicEndpoint: 'https://files.example.com',
      tempDir: path.join(work, 's3-tmp'),
    });
    await behindProxy.put('jobs/j4/result.zip', 'zip');
    const url = await behindProxy.presignedGetUrl('jobs/j4/result.zip', { expiresInSeconds: 30 });
    assert.ok(url.startsWith('https://files.example.com/hwr-test/deploy/a/jobs/j4/result.zip?'), url);
    behindProxy.close();
  });

  test('two prefixes in one bucket do not see each other', async () => {
    const other = new S3BlobStore({ ...s3.settings('deploy/b'), tempDir: path.join(work, 's3-tmp') });
    await store.put('jobs/shared/upload.zip', 'a');
    assert.equal(await other.stat('jobs/shared/upload.zip'), null);
    await other.put('jobs/shared/upload.zip', 'bb');
    await other.deletePrefix('jobs');
    assert.deepEqual(await store.stat('jobs/shared/upload.zip'), { bytes: 1 });
    other.close();
  });

  test('temporary downloads a killed process left are removed once an hour old, live ones kept', async () => {
    const tempDir = path.join(work, 'stale-downloads');
    const withTemp = new S3BlobStore({ ...s3.settings('deploy/a'), tempDir });
    await mkdir(path.join(tempDir, 'blob-old'), { recursive: true });
    await writeFile(path.join(tempDir, 'blob-old', 'page.png'), 'left behind');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    await utimes(path.join(tempDir, 'blob-old'), twoHoursAgo, twoHoursAgo);
    await mkdir(path.join(tempDir, 'blob-live'), { recursive: true });
    await mkdir(path.join(tempDir, 'other'), { recursive: true });
    await utimes(path.join(tempDir, 'other'), twoHoursAgo, twoHoursAgo);
    assert.equal(await withTemp.removeStaleDownloads(), 1);
    assert.equal(existsSync(path.join(tempDir, 'blob-old')), false);
    assert.ok(existsSync(path.join(tempDir, 'blob-live')) && existsSync(path.join(tempDir, 'other')));
    withTemp.close();
  });

  test('a wrong bucket fails the check that a start makes', async () => {
    const wrong = new S3BlobStore({ ...s3.settings(), bucket: 'no-such-bucket', tempDir: path.join(work, 's3-tmp') });
    await assert.rejects(wrong.check(), /NoSuchBucket|does not exist/);
    wrong.close();
  });
});
