// Status, result, cancel and events over real HTTP: every row of the spec's transition
// table (part 3), DELETE and result semantics of docs/contract.md, and the status codes of
// the spec's error table. Two services: one without workers (jobs stay queued) and one
// with scripted pipelines (jobs run, hold, fail on request).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import {
  makeZip,
  createCredentials,
  pagesZip,
  startApiServer,
  waitForState,
  waitForStatus,
  type ApiResponse,
  type Auth,
} from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const idle = await startApiServer(await createTestDatabase());
const pipelines = scriptedPipelines();
const busy = await startApiServer(await createTestDatabase(), { pipelines });
after(async () => {
  await idle.close();
  await busy.close();
});
const idleAuth: Auth = { key: (await createCredentials(idle.runtime)).key };
const busyAuth: Auth = { key: (await createCredentials(busy.runtime)).key };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STATUS_FIELDS = [
  'job_id',
  'state',
  'page_count',
  'current_step',
  'created_at',
  'started_at',
  'finished_at',
  'expires_at',
  'error_message',
  'warning_message',
];

async function eventTypes(server: typeof busy, auth: Auth, jobId: string): Promise<string[]> {
  const response = await server.client.get(`/v1/process-scan/${jobId}/events`, auth);
  assert.equal(response.status, 200);
  return response.body.events.map((event: { type: string }) => event.type);
}

describe('(none) → queued: POST /v1/process-scan', () => {
  test('202 with the submission fields; a GET right after sees queued with every status field present', async () => {
    const submitted = await idle.client.submit(await pagesZip(['1.jpg', '2.jpg', '3.jpg']), idleAuth);
    assert.equal(submitted.status, 202);
    const job = submitted.body;
    assert.match(job.job_id, UUID);
    assert.equal(job.state, 'queued');
    assert.equal(job.page_count, 3);
    assert.equal(job.status_url, `${idle.baseUrl}/v1/process-scan/${job.job_id}`);
    assert.equal(job.result_url, `${idle.baseUrl}/v1/process-scan/${job.job_id}/result`);
    assert.equal(submitted.headers.get('location'), job.status_url);

    const status = await idle.client.get(job.status_url, idleAuth);
    assert.equal(status.status, 200);
    for (const field of STATUS_FIELDS) assert.ok(field in status.body, `status has ${field}`);
    assert.equal(status.body.state, 'queued');
    assert.equal(status.body.current_step, null);
    assert.equal(status.body.started_at, null);
    assert.equal(status.body.finished_at, null);
    assert.equal(status.body.error_message, null);
    assert.equal(status.body.warning_message, null);
    assert.equal(status.body.pages_done, 0);
    assert.equal(status.body.created_at, job.created_at);
    assert.equal(status.body.expires_at, job.expires_at);
    assert.ok(!('result_url' in status.body), 'result_url only when done');
    assert.equal(status.body.callback, null, 'no webhook_url: no callback');
  });
});

describe('queued → cancelled: DELETE while not yet processing', () => {
  test('200 with the status body in state cancelled; DELETE again: 200 again; result: 409, for good; no callback', async () => {
    const { body: job } = await idle.client.submit(await pagesZip(['1.jpg']), idleAuth, { webhook_url: 'https://93.184.215.14/hook' });
    assert.equal((await idle.client.get(job.status_url, idleAuth)).body.callback.state, 'waiting');
    const cancelled = await idle.client.delete(job.status_url, idleAuth);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.state, 'cancelled');
    assert.equal(cancelled.body.job_id, job.job_id);
    assert.ok(cancelled.body.finished_at, 'the cancel time is the finish time');
    assert.equal(cancelled.body.started_at, null);

    const again = await idle.client.delete(job.status_url, idleAuth);
    assert.equal(again.status, 200);
    assert.equal(again.body.state, 'cancelled');
    assert.equal(again.body.finished_at, cancelled.body.finished_at, 'a repeated DELETE changes nothing');

    assert.equal((await idle.client.get(job.status_url, idleAuth)).body.state, 'cancelled');
    assert.equal(again.body.callback.state, 'not_sent', 'a cancelled job gets no callback, and says so');
    const result = await idle.client.get(job.result_url, idleAuth);
    assert.equal(result.status, 409);
    assert.equal(result.body.code, 'job_cancelled');
    assert.equal(result.body.retryable, false, 'the result of a cancelled job never comes');
    assert.deepEqual(await eventTypes(idle, idleAuth, job.job_id), ['JobQueued', 'JobCancelled']);
  });
});

describe('processing → cancelled: DELETE while being processed', () => {
  test('200 with state cancelled; the job never reaches done and is not billed', async () => {
    const { body: job } = await busy.client.submit(await pagesZip(['1.jpg', 'hold-2.jpg']), busyAuth);
    const processing = await waitForStatus(
      busy.client,
      busyAuth,
      job.job_id,
      (body) => body.state === 'processing' && body.pages_done === 1,
      'page 1 done, page 2 held',
    );
    assert.equal(processing.current_step, 'layout', 'the earliest step an unfinished page is at');
    assert.ok(processing.started_at);
    assert.equal(processing.finished_at, null);

    const cancelled = await busy.client.delete(job.status_url, busyAuth);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.state, 'cancelled');
    assert.equal(cancelled.body.current_step, null);
    assert.ok(!('result_url' in cancelled.body));

    pipelines.release(job.job_id);
    // The held page's task sees the cancel and drops its work; nothing follows the cancel.
    await waitForTaskToSettle(job.job_id);
    const types = await eventTypes(busy, busyAuth, job.job_id);
    assert.equal(types.at(-1), 'JobCancelled', `events: ${types.join(', ')}`);
    assert.equal((await busy.client.get(job.status_url, busyAuth)).body.state, 'cancelled');
    assert.equal((await busy.client.get(job.result_url, busyAuth)).status, 409);
    assert.equal((await busy.client.delete(job.status_url, busyAuth)).status, 200);
    const usage = await busy.client.get('/v1/usage', busyAuth);
    assert.equal(usage.status, 200);
    assert.equal((await busy.runtime.db.pool.query('select 1 from billing where job_id = $1', [job.job_id])).rowCount, 0);
  });
});

/** Waits until the job's page tasks are no longer queued or running in pg-boss. */
async function waitForTaskToSettle(jobId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await busy.runtime.db.pool.query<{ n: number }>(
      `select count(*)::int as n from pgboss.job where data->>'jobId' = $1 and state in ('created', 'retry', 'active')`,
      [jobId],
    );
    if (result.rows[0].n === 0) return;
    if (Date.now() > deadline) throw new Error(`tasks of job ${jobId} still pending`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('processing → done (reached)', () => {
  test('current_step and pages_done while processing, then done with result_url and a downloadable ZIP', async () => {
    const { body: job } = await busy.client.submit(await pagesZip(['hold-1.jpg', 'hold-2.jpg']), busyAuth);
    const processing = await waitForState(busy.client, busyAuth, job.job_id, ['processing']);
    assert.equal(processing.current_step, 'layout');
    assert.equal(processing.pages_done, 0);
    assert.ok(!('result_url' in processing));
    const early = await busy.client.get(job.result_url, busyAuth);
    assert.equal(early.status, 409, 'result before done');
    assert.equal(early.body.code, 'job_not_done');
    assert.equal(early.body.retryable, true, 'a job on its way: poll');
    assert.match(early.body.detail, /processing/);

    pipelines.release(job.job_id);
    const done = await waitForState(busy.client, busyAuth, job.job_id, ['done', 'failed']);
    assert.equal(done.state, 'done');
    assert.equal(done.pages_done, 2);
    assert.equal(done.current_step, null);
    assert.equal(done.error_message, null);
    assert.equal(done.result_url, job.result_url, 'the result_url announced in the 202');
    assert.ok(Date.parse(done.started_at) <= Date.parse(done.finished_at));

    const result = await busy.client.get(done.result_url, busyAuth);
    assert.equal(result.status, 200);
    assert.equal(result.headers.get('content-type'), 'application/zip');
    assert.equal(Number(result.headers.get('content-length')), result.raw.length);
    assert.equal(result.headers.get('content-disposition'), `attachment; filename="${job.job_id}.zip"`);
    const events = (await busy.client.get(`/v1/process-scan/${job.job_id}/events`, busyAuth)).body.events;
    const succeeded = events.find((event: { type: string }) => event.type === 'JobSucceeded');
    assert.equal(createHash('sha256').update(result.raw).digest('hex'), succeeded.data.archiveSha256, 'the stored archive, byte for byte');
    assert.equal(result.raw.length, succeeded.data.archiveBytes);
  });

  test('DELETE of a done job: 409, and the job stays done', async () => {
    const { body: job } = await busy.client.submit(await pagesZip(['1.jpg']), busyAuth);
    await waitForState(busy.client, busyAuth, job.job_id, ['done']);
    const refused = await busy.client.delete(job.status_url, busyAuth);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'job_already_finished');
    assert.equal((await busy.client.get(job.status_url, busyAuth)).body.state, 'done');
    assert.equal((await busy.client.get(job.result_url, busyAuth)).status, 200);
  });
});

describe('processing → failed (reached)', () => {
  test('error_message names the page; result 409; DELETE 409; not billed', async () => {
    const { body: job } = await busy.client.submit(await pagesZip(['1.jpg', 'fail-2.jpg']), busyAuth);
    const failed = await waitForState(busy.client, busyAuth, job.job_id, ['done', 'failed']);
    assert.equal(failed.state, 'failed');
    assert.match(failed.error_message, /^page 2 \(fail-2\.jpg\): the scripted pipeline refuses fail-2\.jpg/);
    assert.ok(failed.finished_at);
    assert.equal(failed.current_step, null);
    assert.ok(!('result_url' in failed));

    const result = await busy.client.get(job.result_url, busyAuth);
    assert.equal(result.status, 409);
    assert.equal(result.body.code, 'job_failed');
    assert.equal(result.body.retryable, false, 'the result of a failed job never comes');
    assert.match(result.body.detail, /^The job failed and has no result: page 2 \(fail-2\.jpg\)/);
    const refused = await busy.client.delete(job.status_url, busyAuth);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'job_already_finished');
    assert.equal((await busy.runtime.db.pool.query('select 1 from billing where job_id = $1', [job.job_id])).rowCount, 0);
    const types = await eventTypes(busy, busyAuth, job.job_id);
    assert.equal(types.at(-1), 'JobFailed');
  });
});

describe('GET /v1/process-scan/<job_id>/events', () => {
  test('the whole history in order, with positions, versions and metadata (no key anywhere)', async () => {
    const { body: job } = await busy.client.submit(
      await pagesZip(['1.jpg', '2.jpg']),
      busyAuth,
      {},
      { 'X-Request-Id': 'events-test-0001' },
    );
    await waitForState(busy.client, busyAuth, job.job_id, ['done']);
    const response = await busy.client.get(`/v1/process-scan/${job.job_id}/events`, busyAuth);
    assert.equal(response.status, 200);
    assert.equal(response.body.job_id, job.job_id);
    const events = response.body.events;
    assert.deepEqual(
      events.map((event: { version: number }) => event.version),
      events.map((_: unknown, index: number) => index + 1),
    );
    assert.equal(events[0].type, 'JobQueued');
    assert.equal(events[0].metadata.requestId, 'events-test-0001', 'the request id that caused the event');
    assert.equal(events.at(-1).type, 'JobSucceeded');
    assert.equal(events.filter((event: { type: string }) => event.type === 'PageCompleted').length, 2);
    const positions = events.map((event: { position: string }) => BigInt(event.position));
    assert.ok(positions.every((position: bigint, index: number) => index === 0 || position > positions[index - 1]));
    assert.ok(!response.raw.toString().includes(busyAuth!.key), 'the API key never appears in the history');
  });
});

describe('status codes of the error table', () => {
  const unknown = '00000000-0000-4000-8000-000000000000';

  test('404 for an unknown job id, a malformed id, on every job endpoint', async () => {
    for (const id of [unknown, 'not-a-uuid', `${unknown}x`]) {
      for (const [method, suffix] of [
        ['GET', ''],
        ['GET', '/result'],
        ['GET', '/events'],
        ['DELETE', ''],
      ] as const) {
        const response: ApiResponse = await busy.client.request(method, `/v1/process-scan/${encodeURIComponent(id)}${suffix}`, {
          auth: busyAuth,
        });
        assert.equal(response.status, 404, `${method} ${id}${suffix}`);
        assert.equal(response.body.code, 'job_not_found');
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
      }
    }
  });

  test('401 without a key on every job endpoint and on submission', async () => {
    const { body: job } = await idle.client.submit(await pagesZip(['1.jpg']), idleAuth);
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/result'],
      ['GET', '/events'],
      ['DELETE', ''],
    ] as const) {
      const response = await idle.client.request(method, `/v1/process-scan/${job.job_id}${suffix}`);
      assert.equal(response.status, 401, `${method} ${suffix}`);
      assert.equal(response.body.code, 'missing_api_key');
    }
    const submission = await idle.client.submit(await pagesZip(['1.jpg']), null);
    assert.equal(submission.status, 401);
    assert.equal((await idle.client.get(job.status_url, idleAuth)).body.state, 'queued', 'the unauthenticated DELETE changed nothing');
  });

  test('the job id is case-insensitive (a UUID)', async () => {
    const { body: job } = await idle.client.submit(await pagesZip(['1.jpg']), idleAuth);
    const response = await idle.client.get(`/v1/process-scan/${job.job_id.toUpperCase()}`, idleAuth);
    assert.equal(response.status, 200);
    assert.equal(response.body.job_id, job.job_id);
  });
});

describe('processing → failed on a page that cannot be decoded', () => {
  test("the reason names the page once (the decoder's message began with its name too)", async () => {
    const whole = await readFile(path.resolve(import.meta.dirname, '../fixtures/pages/copiste_wikitexte_0219_2.jpg'));
    const zip = await makeZip([{ name: 'decode-1.jpg', data: whole.subarray(0, whole.length >> 1) }]);
    const { body: job } = await busy.client.submit(zip, busyAuth);
    const failed = await waitForState(busy.client, busyAuth, job.job_id, ['done', 'failed']);
    assert.equal(failed.state, 'failed');
    assert.match(failed.error_message, /^page 1 \(decode-1\.jpg\): cannot decode the image \(/);
  });
});
