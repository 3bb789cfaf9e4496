// METRICS_PORT and METRICS_HOST (README, "Configuration"; docs/operations.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';

test('metrics on 127.0.0.1:9464 by default; METRICS_PORT=0 turns them off; a bad port is refused', () => {
  assert.deepEqual(loadConfig({}).metrics, { port: 9464, host: '127.0.0.1' });
  assert.deepEqual(loadConfig({ METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' }).metrics, { port: 0, host: '0.0.0.0' });
  assert.throws(
    () => loadConfig({ METRICS_PORT: '70000' }),
    (error: unknown) => error instanceof ConfigError && /METRICS_PORT/.test(error.message),
  );
});
