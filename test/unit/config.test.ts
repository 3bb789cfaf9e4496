import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';

test('defaults: embedded database, ./.data, port 8080, 7-day results', () => {
  const config = loadConfig({});
  assert.equal(config.databaseUrl, null);
  assert.equal(config.dataDir, path.resolve('./.data'));
  assert.equal(config.port, 8080);
  assert.equal(config.baseUrl, 'http://localhost:8080');
  assert.equal(config.results.retentionSeconds, 7 * 24 * 3600);
  assert.equal(config.callbacks.retryScale, 1);
  assert.ok(config.workers.pageConcurrency >= 1);
});

test('values are read and BASE_URL loses its trailing slash', () => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://u:p@db:5432/hwr',
    PORT: '9000',
    BASE_URL: 'https://ocr.example.org/',
    WORKER_CONCURRENCY: '3',
    LOG_LEVEL: 'debug',
  });
  assert.equal(config.databaseUrl, 'postgres://u:p@db:5432/hwr');
  assert.equal(config.port, 9000);
  assert.equal(config.baseUrl, 'https://ocr.example.org');
  assert.equal(config.workers.pageConcurrency, 3);
  assert.equal(config.logLevel, 'debug');
});

test('every invalid variable is reported at once, by name', () => {
  assert.throws(
    () =>
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        LOG_LEVEL: 'loud',
        WORKER_CONCURRENCY: '0',
        TLS_CERT_FILE: 'cert.pem',
        WEBHOOK_ALLOW_HTTP: 'maybe',
      }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      const text = error.problems.join('\n');
      for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'WORKER_CONCURRENCY', 'TLS_CERT_FILE', 'WEBHOOK_ALLOW_HTTP'])
        assert.match(text, new RegExp(name));
      return true;
    },
  );
});

test('DATABASE_QUERY_TIMEOUT_MS: the statement timeout plus 10 s by default, none without one; refused when not longer than it', () => {
  assert.deepEqual(loadConfig({}).database, {
    connectTimeoutMs: 10_000,
    statementTimeoutMs: 60_000,
    queryTimeoutMs: 70_000,
    idleInTransactionTimeoutMs: 60_000,
  });
  assert.equal(loadConfig({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0' }).database.idleInTransactionTimeoutMs, 0);
  assert.equal(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '5000' }).database.queryTimeoutMs, 15_000);
  assert.equal(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0' }).database.queryTimeoutMs, 0);
  assert.equal(loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '0' }).database.queryTimeoutMs, 0);
  assert.equal(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_QUERY_TIMEOUT_MS: '30000' }).database.queryTimeoutMs, 30_000);
  assert.throws(
    () => loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '60000' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(
        error.problems.join('\n'),
        /DATABASE_QUERY_TIMEOUT_MS \(60000\) must be longer than DATABASE_STATEMENT_TIMEOUT_MS \(60000\)/,
      );
      return true;
    },
  );
});

test('SHUTDOWN_GRACE_SECONDS fits a 30 s stop window by default; a callback timeout that cannot fit its task is refused', () => {
  assert.equal(loadConfig({}).workers.shutdownGraceSeconds, 25);
  assert.equal(loadConfig({ SHUTDOWN_GRACE_SECONDS: '0' }).workers.shutdownGraceSeconds, 0);
  assert.equal(loadConfig({ CALLBACK_TIMEOUT_MS: '60000' }).callbacks.timeoutMs, 60_000);
  assert.throws(
    () => loadConfig({ CALLBACK_TIMEOUT_MS: '90000' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.problems.join('\n'), /CALLBACK_TIMEOUT_MS must be at most 60000 \(half the callback task's 120 s expiry/);
      return true;
    },
  );
});

test('a correction whose worst case on one page outlasts TASK_EXPIRE_SECONDS is refused at start; the defaults fit', () => {
  const gemini = { GEMINI_API_KEY: 'k' };
  // Defaults: 2 answers x (4 calls x 60 s + 3 waits x 60 s) = 840 s, within 900 s.
  assert.equal(loadConfig(gemini).correction.provider, 'gemini');
  assert.throws(
    () => loadConfig({ ...gemini, CORRECTION_TIMEOUT_MS: '120000' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(
        error.problems.join('\n'),
        /correction's worst case on one page .* = 1320 s\) is longer than TASK_EXPIRE_SECONDS \(900 s\)/,
      );
      return true;
    },
  );
  assert.equal(loadConfig({ ...gemini, CORRECTION_TIMEOUT_MS: '120000', TASK_EXPIRE_SECONDS: '1800' }).workers.taskExpireSeconds, 1800);
  assert.equal(loadConfig({ CORRECTION_TIMEOUT_MS: '120000' }).correction.provider, null, 'no provider, nothing to refuse');
});

test('limits: a request rate per key and unfinished jobs and pages per account, each 0 for none; queued pages fit a largest job', () => {
  const defaults = loadConfig({}).limits;
  assert.deepEqual(defaults.rateLimit, { perSecond: 50, burst: 200 });
  assert.equal(defaults.maxActiveJobsPerAccount, 100);
  assert.equal(defaults.maxQueuedPagesPerAccount, 10_000);
  const off = loadConfig({ RATE_LIMIT_PER_SECOND: '0', MAX_ACTIVE_JOBS_PER_ACCOUNT: '0', MAX_QUEUED_PAGES_PER_ACCOUNT: '0' }).limits;
  assert.deepEqual([off.rateLimit.perSecond, off.maxActiveJobsPerAccount, off.maxQueuedPagesPerAccount], [0, 0, 0]);
  assert.equal(loadConfig({ RATE_LIMIT_PER_SECOND: '0.5' }).limits.rateLimit.perSecond, 0.5);
  assert.throws(
    () => loadConfig({ MAX_PAGES: '500', MAX_QUEUED_PAGES_PER_ACCOUNT: '499', RATE_LIMIT_BURST: '0' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      const text = error.problems.join('\n');
      assert.match(text, /MAX_QUEUED_PAGES_PER_ACCOUNT \(499\) must be at least MAX_PAGES \(500\)/);
      assert.match(text, /RATE_LIMIT_BURST/);
      return true;
    },
  );
});
