// A webhook URL with a token: the callback is sent to the URL whole and the CallbackAttempted
// event keeps it whole (the worker needs it), while the log shows it with its query string
// replaced (docs/callbacks.md).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { createLogger } from '../../src/platform/logger.ts';
import { startRuntime } from '../../src/runtime/runtime.ts';
import { createTestDatabase } from '../support/database.ts';
import { submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const received: string[] = [];
const receiver = http.createServer((request, response) => {
  received.push(request.url ?? '');
  request.resume();
  request.on('end', () => response.writeHead(204).end());
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
after(() => receiver.close());
const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook?token=s3cret-token`;

const lines: string[] = [];
const log = createLogger('debug', {
  destination: new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
});
const config = await testConfig(await createTestDatabase(), { WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'debug' });
const runtime = await startRuntime(config, log, {
  workers: true,
  pipelines: async () => ({ page: testPagePipeline({ worker: 'w' }), export: testExportPipeline() }),
});
after(() => runtime.stop());

test('the callback goes to the whole URL and its event keeps it; the log has it redacted and never the token', async () => {
  const accountId = await testAccount(runtime);
  const jobId = await submitTestJob(runtime, accountId, 1, { webhookUrl });
  assert.equal(await waitForJobState(runtime, jobId, ['done']), 'done');
  for (const deadline = Date.now() + 20_000; received.length === 0; ) {
    assert.ok(Date.now() < deadline, 'the callback arrived');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(received, ['/hook?token=s3cret-token']);
  const attemptEvent = () =>
    runtime.db.pool.query(`select data from events where stream_id = $1 and type = 'CallbackAttempted'`, [`job-${jobId}`]);
  // The attempt is logged, then recorded.
  for (const deadline = Date.now() + 10_000; (await attemptEvent()).rows.length === 0; ) {
    assert.ok(Date.now() < deadline, 'the attempt was recorded');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const attempt = (await attemptEvent()).rows[0];
  assert.equal(attempt.data.url, webhookUrl, 'the event keeps the URL whole');
  const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'callback attempt');
  assert.equal(logged.webhook_url, `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook?[redacted]`);
  assert.equal(logged.ok, true);
  assert.doesNotMatch(lines.join(''), /s3cret-token/);
});
