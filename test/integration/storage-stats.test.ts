// `hwr storage stats`: blobs and bytes by kind, on both stores; the command run as a process
// against the S3 store.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import type { BlobStore } from '../../src/blobs/blob-store.ts';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-blob-store.ts';
import { storageKind, storageStats } from '../../src/blobs/storage-stats.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestS3Server } from '../support/s3-server.ts';

const root = path.resolve(import.meta.dirname, '../..');
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-storage-stats-'));
after(() => rm(work, { recursive: true, force: true }));
const s3 = await startTestS3Server();
const databaseUrl = await createTestDatabase();

const JOB_A = '11111111-1111-4111-8111-111111111111';
const JOB_B = '22222222-2222-4222-8222-222222222222';

async function fill(blobs: BlobStore): Promise<void> {
  await blobs.put(`jobs/${JOB_A}/upload.zip`, Buffer.alloc(100));
  await blobs.put(`jobs/${JOB_A}/pages/0001.jpg`, Buffer.alloc(40));
  await blobs.put(`jobs/${JOB_A}/pages/0001.layout.xml`, Buffer.alloc(7));
  await blobs.put(`jobs/${JOB_A}/pages/0002.png`, Buffer.alloc(50));
  await blobs.put(`jobs/${JOB_A}/results/0001.json`, Buffer.alloc(3));
  await blobs.put(`jobs/${JOB_A}/result.zip`, Buffer.alloc(200));
  await blobs.put(`jobs/${JOB_B}/upload.zip`, Buffer.alloc(1));
  await blobs.put(`jobs/${JOB_B}/stray/file`, Buffer.alloc(5));
}

const expected = {
  jobs: 2,
  kinds: {
    uploads: { blobs: 2, bytes: 101 },
    page_images: { blobs: 2, bytes: 90 },
    layouts: { blobs: 1, bytes: 7 },
    page_results: { blobs: 1, bytes: 3 },
    archives: { blobs: 1, bytes: 200 },
    other: { blobs: 1, bytes: 5 },
  },
  total: { blobs: 8, bytes: 406 },
};

describe('storage stats', () => {
  test('kinds by key', () => {
    assert.equal(storageKind(`jobs/${JOB_A}/upload.zip`), 'uploads');
    assert.equal(storageKind(`jobs/${JOB_A}/pages/0003.tif`), 'page_images');
    assert.equal(storageKind(`jobs/${JOB_A}/pages/0003.layout.xml`), 'layouts');
    assert.equal(storageKind(`jobs/${JOB_A}/results/0003.json`), 'page_results');
    assert.equal(storageKind(`jobs/${JOB_A}/results/0003.0b6c3a9e-3f41-4c5e-9d35-8f1e2a7b6c01-1.json`), 'page_results');
    assert.equal(storageKind(`jobs/${JOB_A}/result.zip`), 'archives');
    assert.equal(storageKind(`jobs/${JOB_A}/result.0b6c3a9e-3f41-4c5e-9d35-8f1e2a7b6c01-0.zip`), 'archives');
    assert.equal(storageKind('elsewhere/x'), 'other');
  });

  test('the filesystem store: a write in progress is not counted', async () => {
    const blobs = new FilesystemBlobStore(path.join(work, 'fs'));
    await fill(blobs);
    await writeFile(
      path.join(blobs.localPath(`jobs/${JOB_A}/pages`), '0003.jpg.0b6f7e3c-2f8e-4a57-9d6c-9f5c1d1d1d1d.tmp'),
      Buffer.alloc(999),
    );
    assert.deepEqual(await storageStats(blobs), expected);
  });

  test('the S3 store, and `hwr storage stats` as a process', async () => {
    const blobs = new S3BlobStore({ ...s3.settings('stats'), tempDir: path.join(work, 'tmp') });
    await fill(blobs);
    assert.deepEqual(await storageStats(blobs), expected);
    blobs.close();
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(root, 'src/cli/main.ts'), 'storage', 'stats'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TMPDIR: process.env.TMPDIR,
        DATABASE_URL: databaseUrl,
        DATA_DIR: path.join(work, 'cli'),
        LOG_LEVEL: 'warn',
        ...s3.env('stats'),
      },
    });
    assert.deepEqual(JSON.parse(stdout), { store: 's3', ...expected });
  });
});
