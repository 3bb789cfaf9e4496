// Result expiry (docs/contract.md): after expires_at the result is 410 and the expiry task
// deletes the job's files. One API process keeps the default 7 days; a second one on
// the same database hands out results that expire after RESULT_RETENTION_SECONDS=2.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { QUEUES } from '../../src/queue/queues.ts';
import { expireResults } from '../../src/workers/tasks/expire-results-worker.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, waitForState, type ApiServer, type Auth } from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const databaseUrl = await createTestDatabase();
const pipelines = scriptedPipelines();
const service = await startApiServer(databaseUrl, { pipelines });
const shortLived = await startApiServer(databaseUrl, { env: { RESULT_RETENTION_SECONDS: '2', DATA_DIR: service.config.dataDir } });
after(async () => {
  await shortLived.close();
  await service.close();
});
const auth: Auth = { key: (await createCredentials(service.runtime, 'expiring')).key };
const deps = { bus: service.runtime.bus, blobs: service.runtime.blobs, log: service.runtime.log };
// The service's own once-a-minute expiry task is taken off its workers: every expiry here is one
// the test runs (expireResults), so that what happens before it can be seen.
await service.runtime.boss.offWork(QUEUES.expireResults);

async function storedFiles(server: ApiServer, jobId: string): Promise<string[]> {
  try {
    return await readdir(path.join(server.config.dataDir, 'blobs', 'jobs', jobId), { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

async function eventTypes(jobId: string): Promise<string[]> {
  const events = (await service.client.get(`/v1/process-scan/${jobId}/events`, auth)).body.events;
  return events.map((event: { type: string }) => event.type);
}

describe('result expiry', () => {
  test('the expiry task at expires_at: files deleted, ResultExpired recorded, result 410', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['1.jpg', '2.jpg']), auth);
    const done = await waitForState(service.client, auth, job.job_id, ['done']);
    assert.equal((await service.client.get(job.result_url, auth)).status, 200);
    assert.ok((await storedFiles(service, job.job_id)).length > 0);

    // Nothing is due yet.
    assert.equal(await expireResults(deps), 0);
    assert.equal((await service.client.get(job.result_url, auth)).status, 200);

    // The task as it runs at expires_at.
    const expiresAt = new Date(Date.parse(done.expires_at) + 1000);
    assert.ok((await expireResults(deps, expiresAt)) >= 1);
    assert.deepEqual(await storedFiles(service, job.job_id), [], 'upload, pages, page results and archive are deleted');
    assert.equal((await eventTypes(job.job_id)).at(-1), 'ResultExpired');

    const gone = await service.client.get(job.result_url, auth);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.code, 'result_expired');
    assert.equal(gone.headers.get('content-type'), 'application/problem+json');
    const status = await service.client.get(job.status_url, auth);
    assert.equal(status.body.state, 'done', 'the job stays done');
    // Running the task again changes nothing.
    assert.equal(await expireResults(deps, expiresAt), 0);
  });

  test('after expires_at the result is 410 at once, even before the expiry task has run', async () => {
    const { body: job } = await shortLived.client.submit(await pagesZip(['1.jpg']), auth);
    assert.equal(Date.parse(job.expires_at) - Date.parse(job.created_at), 2000, 'RESULT_RETENTION_SECONDS');
    const done = await waitForState(shortLived.client, auth, job.job_id, ['done']);
    // Wait for the known instant (not a guess): expires_at from the status.
    const wait = Date.parse(done.expires_at) - Date.now() + 50;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const gone = await shortLived.client.get(job.result_url, auth);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.code, 'result_expired');
    assert.match(gone.body.detail, new RegExp(done.expires_at.replace(/[.]/g, '\\.')));
    // The expiry task had not run: no ResultExpired, the files still there.
    assert.ok(!(await eventTypes(job.job_id)).includes('ResultExpired'));
    assert.ok((await storedFiles(shortLived, job.job_id)).length > 0);

    assert.ok((await expireResults(deps)) >= 1);
    assert.deepEqual(await storedFiles(shortLived, job.job_id), []);
    assert.equal((await eventTypes(job.job_id)).at(-1), 'ResultExpired');
    assert.equal((await shortLived.client.get(job.result_url, auth)).status, 410);
  });

  test('a done job whose archive file has gone missing answers 410, not 500', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['1.jpg']), auth);
    await waitForState(service.client, auth, job.job_id, ['done']);
    const events = (await service.client.get(`/v1/process-scan/${job.job_id}/events`, auth)).body.events;
    const archiveKey = events.find((event: { type: string }) => event.type === 'JobSucceeded').data.archiveKey;
    await service.runtime.blobs.deletePrefix(archiveKey);
    const gone = await service.client.get(job.result_url, auth);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.code, 'result_expired');
    assert.match(gone.body.detail, /no longer stored/);
  });

  test('a job that never finished is not expired and its result stays 409', async () => {
    const { body: job } = await shortLived.client.submit(await pagesZip(['hold-1.jpg']), auth);
    await waitForState(service.client, auth, job.job_id, ['processing']);
    await expireResults(deps, new Date(Date.parse(job.expires_at) + 1000));
    assert.ok(!(await eventTypes(job.job_id)).includes('ResultExpired'));
    assert.equal((await service.client.get(job.result_url, auth)).status, 409);
    assert.ok((await storedFiles(service, job.job_id)).length > 0, 'a running job keeps its files');
    pipelines.release(job.job_id);
    await waitForState(service.client, auth, job.job_id, ['done']);
  });
});
