// Webhook URLs in logs: query string, fragment and user info replaced, host and path kept.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { redactUrl } from '../../src/callbacks/redact-url.ts';
import { createLogger } from '../../src/logger.ts';

test('redactUrl replaces the query string, the fragment and the user info, and is idempotent', () => {
  assert.equal(redactUrl('https://hooks.example.com/hwr/done?token=s3cret&x=1'), 'https://hooks.example.com/hwr/done?[redacted]');
  assert.equal(redactUrl('https://user:pa55@hooks.example.com:8443/cb#sig=abc'), 'https://[redacted]@hooks.example.com:8443/cb#[redacted]');
  assert.equal(redactUrl('https://hooks.example.com/cb'), 'https://hooks.example.com/cb');
  const once = redactUrl('https://u@h.example/p?q=1');
  assert.equal(redactUrl(once), once);
  assert.equal(redactUrl('not a url ?token=s3cret'), '[redacted: not a URL]');
  assert.equal(redactUrl(undefined), '[redacted]');
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
