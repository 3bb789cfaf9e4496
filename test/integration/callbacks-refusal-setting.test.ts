// Issue 42: a webhook address refused at delivery (the address rules are checked again then) is
// recorded in the attempt's event, which the customer reads (GET …/events), in customer words; the
// server setting behind the refusal goes to the callback worker's log line only (`setting`).
// Real sendCallback, literal addresses: no DNS, no connection is made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sendCallback } from '../../src/callbacks/send-callback.ts';

const SETTING_NAME = /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/;
const attempt = (url: string, options: { allowHttp: boolean; allowPrivate: boolean }) =>
  sendCallback({
    url,
    body: Buffer.from('{}'),
    secret: 'a'.repeat(64),
    event: 'job.completed',
    deliveryId: 'd1',
    timeoutMs: 2000,
    ...options,
  });

test('a private address refused at delivery: the event says why without naming WEBHOOK_ALLOW_PRIVATE; the log gets it', async () => {
  const outcome = await attempt('https://10.1.2.3/hook', { allowHttp: false, allowPrivate: false });
  assert.equal(outcome.ok, false);
  assert.match(outcome.error ?? '', /^invalid_webhook_url: webhook_url host 10\.1\.2\.3 is .*; only public addresses are accepted$/);
  assert.doesNotMatch(outcome.error ?? '', SETTING_NAME);
  assert.equal(outcome.setting, 'WEBHOOK_ALLOW_PRIVATE');
});

test('plain http refused at delivery: the event says https, not WEBHOOK_ALLOW_HTTP; the log gets it', async () => {
  const outcome = await attempt('http://93.184.215.14/hook', { allowHttp: false, allowPrivate: false });
  assert.match(outcome.error ?? '', /^invalid_webhook_url: webhook_url must be an https URL/);
  assert.doesNotMatch(outcome.error ?? '', SETTING_NAME);
  assert.equal(outcome.setting, 'WEBHOOK_ALLOW_HTTP');
});
