// Signed callbacks (spec part 6, docs/contract.md) to a real receiver in the test: it checks
// X-SVC-Signature over the raw bytes with the account's webhook secret, answers 500 at
// first and 200 later, or never answers well; CALLBACK_RETRY_SCALE=0.002 runs the
// 1/5/25/125/625 s schedule in about 3 s.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { rotateWebhookSecret } from '../../src/use-cases/accounts.ts';
import { CALLBACK_RETRY_DELAYS_SECONDS } from '../../domain/job-decide.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';
import {
  API_TEST_ENV,
  createCredentials,
  pagesZip,
  startApiServer,
  waitForStatus,
  type ApiServer,
  type Auth,
} from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const RETRY_SCALE = Number(API_TEST_ENV.CALLBACK_RETRY_SCALE);

interface Delivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: Record<string, unknown>;
  receivedAt: number;
  signatureValid: boolean;
  answered: number;
}

/**
 * A webhook receiver. Paths choose the behaviour: /ok answers 204, /flaky answers 500 to
 * the first delivery of each job and 200 after, /never always 500. A bad signature is 403.
 */
class Receiver {
  readonly deliveries: Delivery[] = [];
  secret: string;
  private readonly server: http.Server;

  constructor(secret: string) {
    this.secret = secret;
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const raw = Buffer.concat(chunks);
        const expected = createHmac('sha256', this.secret).update(raw).digest();
        const given = Buffer.from(String(request.headers['x-svc-signature'] ?? ''), 'hex');
        const signatureValid = given.length === expected.length && timingSafeEqual(given, expected);
        const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
        const earlier = this.forJob(String(body.job_id)).length;
        const path = request.url ?? '';
        const answered = !signatureValid ? 403 : path === '/ok' ? 204 : path === '/flaky' ? (earlier === 0 ? 500 : 200) : 500;
        this.deliveries.push({ path, headers: request.headers, raw, body, receivedAt: Date.now(), signatureValid, answered });
        response.writeHead(answered, { 'Content-Type': 'text/plain' }).end(answered < 300 ? 'thanks' : 'not now');
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  forJob(jobId: string): Delivery[] {
    return this.deliveries.filter((delivery) => delivery.body.job_id === jobId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const databaseUrl = await createTestDatabase();
const pipelines = scriptedPipelines();
const service = await startApiServer(databaseUrl, { pipelines });
const credentials = await createCredentials(service.runtime, 'hooked');
const auth: Auth = { key: credentials.key };
const receiver = new Receiver(credentials.webhookSecret);
const receiverUrl = await receiver.listen();
after(async () => {
  await service.close();
  await receiver.close();
});

function waitForDelivery(server: ApiServer, jobId: string, states: string[], timeoutMs = 60_000) {
  return waitForStatus(
    server.client,
    auth,
    jobId,
    (body) => states.includes(body.callback?.state),
    `callback ${states.join('|')}`,
    timeoutMs,
  );
}

async function callbackEvents(server: ApiServer, jobId: string) {
  const events: Array<{ type: string; data: Record<string, any> }> = (await server.client.get(`/v1/process-scan/${jobId}/events`, auth))
    .body.events;
  return events.filter((event) => event.type.startsWith('Callback'));
}

/** The job's callback tasks still queued, retrying or running, counted once the task that recorded the last attempt
 * has gone back to pg-boss: the status shows an attempt as soon as the worker records it, a moment before pg-boss
 * marks that task completed (counting at once made this check fail about one run in seven). A task that stays
 * active longer than a few seconds is counted. */
async function pendingCallbackTasks(server: ApiServer, jobId: string): Promise<number> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const result = await server.runtime.db.pool.query<{ pending: number; active: number }>(
      `select count(*)::int as pending, count(*) filter (where state = 'active')::int as active
         from pgboss.job where name = 'hwr-callback' and data->>'jobId' = $1 and state in ('created', 'retry', 'active')`,
      [jobId],
    );
    const { pending, active } = result.rows[0];
    if (active === 0 || Date.now() > deadline) return pending;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function assertSignedDelivery(delivery: Delivery, event: string): void {
  assert.ok(delivery.signatureValid, 'X-SVC-Signature is the HMAC-SHA256 of the raw body with the webhook secret');
  assert.match(String(delivery.headers['x-svc-signature']), /^[0-9a-f]{64}$/, 'lowercase hex');
  assert.equal(delivery.headers['content-type'], 'application/json');
  assert.equal(delivery.headers['x-svc-event'], event);
  assert.equal(delivery.headers['x-svc-delivery'], delivery.body.event_id);
  assert.equal(Number(delivery.headers['content-length']), delivery.raw.length);
  service.client.validator.checkComponent('Callback', delivery.body);
}

describe('a job that reaches done', () => {
  test('is delivered signed; a 500 is retried and the 200 ends the delivery', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['1.jpg', '2.jpg']), auth, { webhook_url: `${receiverUrl}/flaky` });
    const status = await waitForDelivery(service, job.job_id, ['delivered', 'abandoned']);
    assert.equal(status.state, 'done');
    assert.deepEqual(status.callback, { state: 'delivered', attempts: 2, last_status: 200, next_attempt_at: null });

    const deliveries = receiver.forJob(job.job_id);
    assert.deepEqual(
      deliveries.map((delivery) => delivery.answered),
      [500, 200],
      'the retry came, and nothing after the 200',
    );
    for (const delivery of deliveries) {
      assertSignedDelivery(delivery, 'job.completed');
      assert.equal(delivery.path, '/flaky');
      assert.deepEqual(
        {
          job_id: delivery.body.job_id,
          state: delivery.body.state,
          page_count: delivery.body.page_count,
          result_url: delivery.body.result_url,
          event: delivery.body.event,
        },
        { job_id: job.job_id, state: 'done', page_count: 2, result_url: job.result_url, event: 'job.completed' },
      );
      assert.ok(!('error_message' in delivery.body));
    }
    assert.equal(deliveries[0].body.event_id, deliveries[1].body.event_id, 'the same event_id on every retry');
    assert.equal(deliveries[0].headers['x-svc-delivery'], deliveries[1].headers['x-svc-delivery']);

    const events = await callbackEvents(service, job.job_id);
    assert.deepEqual(
      events.map((event) => [event.type, event.data.attempt, event.data.ok, event.data.httpStatus]),
      [
        ['CallbackAttempted', 1, false, 500],
        ['CallbackAttempted', 2, true, 200],
      ],
    );
    assert.ok(deliveries[1].receivedAt >= Date.parse(events[0].data.nextAttemptAt) - 50, 'the retry waited for its time');
    assert.equal(await pendingCallbackTasks(service, job.job_id), 0);

    // The result_url in the callback works with the account's key.
    const result = await service.client.get(String(deliveries[1].body.result_url), auth);
    assert.equal(result.status, 200);
  });
});

describe('a job that reaches failed', () => {
  test('sends job.failed with error_message and no result_url', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['fail-1.jpg']), auth, { webhook_url: `${receiverUrl}/ok` });
    const status = await waitForDelivery(service, job.job_id, ['delivered', 'abandoned']);
    assert.equal(status.state, 'failed');
    assert.deepEqual(status.callback, { state: 'delivered', attempts: 1, last_status: 204, next_attempt_at: null });
    const [delivery, ...more] = receiver.forJob(job.job_id);
    assert.equal(more.length, 0);
    assertSignedDelivery(delivery, 'job.failed');
    assert.equal(delivery.body.state, 'failed');
    assert.equal(delivery.body.event, 'job.failed');
    assert.equal(delivery.body.page_count, 1);
    assert.equal(delivery.body.error_message, status.error_message);
    assert.ok(!('result_url' in delivery.body));
  });
});

describe('a receiver that never answers well', () => {
  test('sees exactly six attempts on the 1/5/25/125/625 s schedule, and the status shows the delivery abandoned', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['1.jpg']), auth, { webhook_url: `${receiverUrl}/never` });
    const status = await waitForDelivery(service, job.job_id, ['delivered', 'abandoned']);
    assert.equal(status.state, 'done');
    assert.deepEqual(status.callback, { state: 'abandoned', attempts: 6, last_status: 500, next_attempt_at: null });
    // Delivery has ended: no attempt is queued, running or due.
    assert.equal(await pendingCallbackTasks(service, job.job_id), 0);
    const deliveries = receiver.forJob(job.job_id);
    assert.equal(deliveries.length, 6);
    for (const delivery of deliveries) assertSignedDelivery(delivery, 'job.completed');
    assert.equal(new Set(deliveries.map((delivery) => delivery.body.event_id)).size, 1);

    const events = await callbackEvents(service, job.job_id);
    assert.deepEqual(
      events.map((event) => event.type),
      [...Array(6).fill('CallbackAttempted'), 'CallbackAbandoned'],
    );
    assert.deepEqual(
      events.slice(0, 6).map((event) => event.data.attempt),
      [1, 2, 3, 4, 5, 6],
    );
    assert.equal(events[5].data.nextAttemptAt, null);
    assert.equal(events[6].data.attempts, 6);
    for (let retry = 1; retry < 6; retry++) {
      const gap = deliveries[retry].receivedAt - deliveries[retry - 1].receivedAt;
      const scheduled = CALLBACK_RETRY_DELAYS_SECONDS[retry - 1] * RETRY_SCALE * 1000;
      assert.ok(gap >= scheduled - 5, `retry ${retry} came ${gap} ms after the previous attempt; due after ${scheduled} ms`);
      assert.ok(deliveries[retry].receivedAt >= Date.parse(events[retry - 1].data.nextAttemptAt) - 50);
    }
  });
});

describe('webhook secret and address', () => {
  test('a rotated secret signs the next callback', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['hold-1.jpg']), auth, { webhook_url: `${receiverUrl}/ok` });
    await waitForStatus(service.client, auth, job.job_id, (body) => body.state === 'processing', 'processing');
    const rotated = await rotateWebhookSecret(service.runtime.bus, credentials.accountName, 'test');
    assert.notEqual(rotated, credentials.webhookSecret);
    receiver.secret = rotated;
    pipelines.release(job.job_id);
    const status = await waitForDelivery(service, job.job_id, ['delivered', 'abandoned']);
    assert.equal(status.callback.state, 'delivered');
    assert.ok(receiver.forJob(job.job_id)[0].signatureValid);
  });

  test('without webhook_url no callback is sent', async () => {
    const { body: job } = await service.client.submit(await pagesZip(['1.jpg']), auth);
    const status = await waitForStatus(service.client, auth, job.job_id, (body) => body.state === 'done', 'done');
    assert.equal(status.callback, null);
    assert.equal(await pendingCallbackTasks(service, job.job_id), 0);
    const tasks = await service.runtime.db.pool.query(`select 1 from pgboss.job where name = 'hwr-callback' and data->>'jobId' = $1`, [
      job.job_id,
    ]);
    assert.equal(tasks.rowCount, 0);
    assert.deepEqual(await callbackEvents(service, job.job_id), []);
    assert.equal(receiver.forJob(job.job_id).length, 0);
  });

  test('the address check is repeated at delivery time: a worker that refuses private addresses never connects', async () => {
    // An API that accepts the loopback receiver (WEBHOOK_ALLOW_PRIVATE=1) and, on another
    // database, workers configured without that relaxation.
    const otherDatabase = await createTestDatabase();
    const api = await startApiServer(otherDatabase);
    const workers = await startTestRuntime(
      await testConfig(otherDatabase, { ...API_TEST_ENV, WEBHOOK_ALLOW_PRIVATE: '0' }, api.config.dataDir),
      scriptedPipelines(),
    );
    try {
      const other = await createCredentials(api.runtime, 'hooked');
      const { body: job } = await api.client.submit(await pagesZip(['1.jpg']), { key: other.key }, { webhook_url: `${receiverUrl}/ok` });
      assert.ok(job.job_id);
      const status = await waitForStatus(
        api.client,
        { key: other.key },
        job.job_id,
        (body) => ['delivered', 'abandoned'].includes(body.callback?.state),
        'delivery ended',
      );
      assert.equal(status.state, 'done');
      assert.equal(status.callback.state, 'abandoned');
      assert.equal(status.callback.last_status, null, 'no HTTP answer: never connected');
      assert.equal(receiver.forJob(job.job_id).length, 0);
      const events: Array<{ type: string; data: Record<string, any> }> = (
        await api.client.get(`/v1/process-scan/${job.job_id}/events`, { key: other.key })
      ).body.events;
      const attempts = events.filter((event) => event.type === 'CallbackAttempted');
      assert.equal(attempts.length, 6);
      for (const attempt of attempts) assert.match(attempt.data.error, /^invalid_webhook_url: .*loopback/i);
    } finally {
      await workers.stop();
      await api.close();
    }
  });
});
