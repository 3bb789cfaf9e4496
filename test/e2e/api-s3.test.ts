// The service with BLOB_STORE=s3 (a real S3-protocol server, test/support/s3-server.ts): an
// upload, its pages, page results and the archive go to the bucket and none to DATA_DIR; the
// result download answers 302 to a presigned URL (RESULT_REDIRECT, on by default with S3) that
// serves the archive without the API key, or streams it with RESULT_REDIRECT=0; expiry deletes
// the job's objects; the bucket away is a 503 storage_unavailable, not a 500.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { S3BlobStore } from '../../src/blobs/s3-blob-store.ts';
import { storageStats } from '../../src/blobs/storage-stats.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { HwrClient } from '../../src/client/index.ts';
import { expireResults } from '../../src/workers/tasks/expire-results-worker.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, waitForState, type Auth } from '../support/http-client.ts';
import { portalUser } from '../support/portal-client.ts';
import { startTestS3Server } from '../support/s3-server.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const s3 = await startTestS3Server();
const databaseUrl = await createTestDatabase();
const service = await startApiServer(databaseUrl, {
  pipelines: scriptedPipelines(),
  env: { ...s3.env('hwr'), RESULT_URL_TTL_SECONDS: '120' },
});
const streaming = await startApiServer(databaseUrl, { env: { ...s3.env('hwr'), RESULT_REDIRECT: '0' } });
after(async () => {
  await streaming.close();
  await service.close();
});
const auth: Auth = { key: (await createCredentials(service.runtime, 's3')).key };
const bucket = new S3BlobStore({ ...s3.settings('hwr'), tempDir: path.join(service.config.dataDir, 'tmp', 'check') });
after(() => bucket.close());

describe('BLOB_STORE=s3', () => {
  test('a job stores everything in the bucket; the result is a 302 to a presigned URL; expiry deletes the objects', async () => {
    assert.ok(service.runtime.blobs instanceof S3BlobStore, 'the runtime uses the S3 store');
    const { status, body: job } = await service.client.submit(await pagesZip(['1.jpg', '2.jpg']), auth);
    assert.equal(status, 202);
    await waitForState(service.client, auth, job.job_id, ['done']);

    const stored = (await bucket.list(`jobs/${job.job_id}`)).sort();
    // The archive is named by the export attempt that wrote it (blob-keys.ts).
    const archiveName = stored.find((name) => /^result\.[\w-]+\.zip$/.test(name));
    assert.deepEqual(stored, ['pages', archiveName, 'results', 'upload.zip']);
    assert.equal((await bucket.list(`jobs/${job.job_id}/pages`)).length, 2);
    assert.equal(existsSync(path.join(service.config.dataDir, 'blobs')), false, 'nothing under DATA_DIR/blobs');

    const answer = await service.client.get(job.result_url, auth);
    assert.equal(answer.status, 302);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    const location = answer.headers.get('location') ?? '';
    assert.ok(location.startsWith(`${s3.endpoint}/${s3.bucket}/hwr/jobs/${job.job_id}/`), location);
    assert.match(location, /X-Amz-Expires=120&/);
    const download = await fetch(location); // no API key
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-disposition'), `attachment; filename="${job.job_id}.zip"`);
    const archive = Buffer.from(await download.arrayBuffer());
    assert.deepEqual(JSON.parse(archive.toString()).pages, ['page 1', 'page 2']);

    // The hwr client (`hwr result`) follows the redirect, and sends the API key to the service only.
    const seen: Array<{ origin: string; key: boolean }> = [];
    const recording: typeof fetch = (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      seen.push({ origin: url.origin, key: new Headers(init?.headers).has('x-api-key') });
      return fetch(input, init);
    };
    const hwr = new HwrClient({ url: service.baseUrl, apiKey: auth!.key, fetch: recording });
    const saved = path.join(service.config.dataDir, 'downloaded.zip');
    assert.deepEqual(await hwr.downloadResult(job.job_id, saved), { path: saved, bytes: archive.length });
    assert.deepEqual(await readFile(saved), archive);
    assert.deepEqual(seen, [
      { origin: service.baseUrl, key: true },
      { origin: s3.endpoint, key: false },
    ]);

    // RESULT_REDIRECT=0: the same archive streamed through the API.
    const streamed = await streaming.client.get(`${streaming.baseUrl}/v1/process-scan/${job.job_id}/result`, auth);
    assert.equal(streamed.status, 200);
    assert.equal(streamed.headers.get('content-type'), 'application/zip');
    assert.equal(Number(streamed.headers.get('content-length')), archive.length);
    assert.deepEqual(streamed.raw, archive);

    const counted = await storageStats(bucket);
    assert.deepEqual(
      {
        uploads: counted.kinds.uploads.blobs,
        pages: counted.kinds.page_images.blobs,
        results: counted.kinds.page_results.blobs,
        archives: counted.kinds.archives.blobs,
      },
      { uploads: 1, pages: 2, results: 2, archives: 1 },
    );
    assert.ok(counted.total.bytes > 0);

    const done = await service.client.get(job.status_url, auth);
    const deps = { bus: service.runtime.bus, blobs: service.runtime.blobs, log: service.runtime.log };
    assert.ok((await expireResults(deps, new Date(Date.parse(done.body.expires_at) + 1000))) >= 1);
    assert.deepEqual(await bucket.list(`jobs/${job.job_id}`), [], 'upload, pages, page results and archive deleted');
    assert.equal((await service.client.get(job.result_url, auth)).status, 410);
    assert.deepEqual((await storageStats(bucket)).total, { blobs: 0, bytes: 0 }, 'the bytes are gone');
    assert.deepEqual((await verifyProjections(service.runtime.db.pool)).differences, [], 'projections verify after expiry');
  });

  test('an archive missing from the bucket answers 410, not a redirect to nothing', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['1.jpg']), auth);
    await waitForState(service.client, auth, job.job_id, ['done']);
    const events = (await service.client.get(`/v1/process-scan/${job.job_id}/events`, auth)).body.events;
    await bucket.deletePrefix(events.find((event: { type: string }) => event.type === 'JobSucceeded').data.archiveKey);
    const gone = await service.client.get(job.result_url, auth);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.code, 'result_expired');
  });

  test('the bucket away: a submission, a result and a portal page image answer 503 storage_unavailable with Retry-After; the same submission goes through once it is back', async () => {
    const { body: done } = await service.client.submit(await pagesZip(['1.jpg']), auth);
    await waitForState(service.client, auth, done.job_id, ['done']);
    const user = await portalUser(service.runtime, service.baseUrl, 's3', 'owner@example.org');
    const zip = await pagesZip(['1.jpg', '2.jpg']);
    const key = { 'Idempotency-Key': 'bucket-away' };
    await s3.pause();
    try {
      for (const answer of [
        await service.client.submit(zip, auth, {}, key),
        await service.client.get(done.result_url, auth),
        await streaming.client.get(done.result_url, auth),
      ]) {
        assert.equal(answer.status, 503, JSON.stringify(answer.body));
        assert.equal(answer.body.code, 'storage_unavailable');
        assert.equal(answer.body.retryable, true);
        assert.equal(answer.headers.get('retry-after'), '5');
      }
      // The job is still there to ask about: only stored files are away.
      assert.equal((await service.client.get(`/v1/process-scan/${done.job_id}`, auth)).status, 200);
      // The portal's page image says the same, as a page.
      const image = await user.get(`/portal/jobs/${done.job_id}/pages/1/image?w=1200`);
      assert.equal(image.status, 503, image.text);
      assert.equal(image.headers.get('retry-after'), '5');
      assert.match(image.text, /cannot reach its file storage at the moment/);
    } finally {
      await s3.resume();
    }
    const again = await service.client.submit(zip, auth, {}, key);
    assert.equal(again.status, 202);
    await waitForState(service.client, auth, again.body.job_id, ['done']);
    assert.equal((await service.client.get(done.result_url, auth)).status, 302);
  });
});
