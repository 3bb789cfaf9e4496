// Webhook URLs in logs: query string, fragment, user info and token-like path segments replaced, host and the rest of the path kept.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { redactUrl } from '../../src/shared/redact-url.ts';
import { createLogger } from '../../src/platform/logger.ts';

test('redactUrl replaces the query string, the fragment and the user info, and is idempotent', () => {
  assert.equal(redactUrl('https://hooks.example.com/hwr/done?token=s3cret&x=1'), 'https://hooks.example.com/hwr/done?[redacted]');
  assert.equal(redactUrl('https://user:pa55@hooks.example.com:8443/cb#sig=abc'), 'https://[redacted]@hooks.example.com:8443/cb#[redacted]');
  assert.equal(redactUrl('https://hooks.example.com/cb'), 'https://hooks.example.com/cb');
  const once = redactUrl('https://u@h.example/p?q=1');
  assert.equal(redactUrl(once), once);
  assert.equal(redactUrl('not a url ?token=s3cret'), '[redacted: not a URL]');
  assert.equal(redactUrl(undefined), '[redacted]');
});

test('redactUrl replaces path segments that may be tokens, and keeps words and short ids', () => {
  // Slack's and Discord's webhook addresses carry their secret as the last path segment.
  assert.equal(
    redactUrl('https://hooks.slack.com/services/T0001/B0002/XXXXXXXXXXXXXXXXXXXXXXXX'),
    'https://hooks.slack.com/services/T0001/B0002/[redacted]',
  );
  assert.equal(
    redactUrl('https://discord.com/api/webhooks/123456789012345678/aBcD-eFgH_iJkLmNoPqRsTuVwXyZ0123456789'),
    'https://discord.com/api/webhooks/123456789012345678/[redacted]',
  );
  assert.equal(
    redactUrl('https://hooks.example.com/catch/550e8400-e29b-41d4-a716-446655440000?x=1'),
    'https://hooks.example.com/catch/[redacted]?[redacted]',
  );
  assert.equal(redactUrl('https://hooks.example.com/k/9f86d081884c7d65'), 'https://hooks.example.com/k/[redacted]');
  assert.equal(
    redactUrl('https://hooks.example.com/v1/notifications-handler/done'),
    'https://hooks.example.com/v1/notifications-handler/done',
  );
  const once = redactUrl('https://hooks.slack.com/services/T0001/B0002/XXXXXXXXXXXXXXXXXXXXXXXX');
  assert.equal(redactUrl(once), once);
});

test('the logger redacts webhook URLs in whatever object carries them, and still hides secrets', () => {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const log = createLogger('info', { destination });
  const url = 'https://user:pw@hooks.example.com/cb?token=s3cret';
  log.info({ webhook_url: url }, 'one');
  log.info({ options: { webhookUrl: url, llmTier: 'cheap' } }, 'two');
  log.info({ state: { options: { webhookUrl: url } } }, 'three');
  log.info({ task: { webhookUrl: url }, secret: 'hunter2' }, 'four');
  const all = lines.join('');
  assert.doesNotMatch(all, /s3cret|user:pw|hunter2/);
  const parsed = lines.map((line) => JSON.parse(line));
  assert.equal(parsed[0].webhook_url, 'https://[redacted]@hooks.example.com/cb?[redacted]');
  assert.equal(parsed[1].options.webhookUrl, 'https://[redacted]@hooks.example.com/cb?[redacted]');
  assert.equal(parsed[1].options.llmTier, 'cheap');
  assert.equal(parsed[2].state.options.webhookUrl, 'https://[redacted]@hooks.example.com/cb?[redacted]');
  assert.equal(parsed[3].task.webhookUrl, 'https://[redacted]@hooks.example.com/cb?[redacted]');
  assert.equal(parsed[3].secret, '[redacted]');
});
