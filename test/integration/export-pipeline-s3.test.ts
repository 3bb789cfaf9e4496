// The real export pipeline on the S3 store: real page images and results in the bucket, the
// archive (with its PDF/A) streamed through a lib-storage upload; a failure leaves no archive.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { S3BlobStore } from '../../src/blobs/s3-blob-store.ts';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { fixturePages, stageExportJob } from '../support/export-job.ts';
import { startTestS3Server } from '../support/s3-server.ts';

const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-export-s3-'));
after(() => rm(work, { recursive: true, force: true }));
const s3 = await startTestS3Server();
const blobs = new S3BlobStore({ ...s3.settings('export'), tempDir: path.join(work, 'tmp') });
after(() => blobs.close());
const pipeline = createExportPipeline();
const pages = await fixturePages();
const log = pino({ level: 'silent' });

describe('export pipeline on S3', () => {
  it('streams a complete, valid archive of real pages into the bucket', async () => {
    const task = await stageExportJob(blobs, pages);
    const outcome = await pipeline.exportJob(task, { blobs, signal: new AbortController().signal, log });
    const zip = await blobs.get(task.archiveKey);
    assert.equal(outcome.bytes, zip.length);
    assert.deepEqual(await blobs.stat(task.archiveKey), { bytes: zip.length });
    assert.equal(outcome.sha256, createHash('sha256').update(zip).digest('hex'));
    const checked = await checkResultArchive(zip);
    assert.equal(checked.manifest.job_id, task.jobId);
    assert.equal(checked.pages.length, pages.length);
  });

  it('a missing page result fails the export and leaves no archive in the bucket', async () => {
    const task = await stageExportJob(blobs, pages.slice(1, 3));
    await blobs.deletePrefix(task.pages[1].resultKey);
    await assert.rejects(pipeline.exportJob(task, { blobs, signal: new AbortController().signal, log }), { code: 'page_result_missing' });
    assert.equal(await blobs.stat(task.archiveKey), null);
  });
});
