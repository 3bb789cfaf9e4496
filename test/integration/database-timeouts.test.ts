// PostgreSQL timeouts (docs/reliability.md): every session of the service's pools has
// DATABASE_STATEMENT_TIMEOUT_MS as its statement_timeout, and the operations that legitimately run
// long (migrations, waiting for another process's migrations, `hwr projections rebuild/verify`) lift it.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { openDatabase } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { MIGRATION_LOCK } from '../../src/store/locks.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';

const url = await createTestDatabase();
const db = openDatabase(url, { max: 2, connectTimeoutMs: 5_000, statementTimeoutMs: 300 });
const holder = openDatabase(url, { max: 1 });
after(() => Promise.all([db.close(), holder.close()]));

test('a statement longer than the statement timeout is cancelled by PostgreSQL', async () => {
  const started = Date.now();
  await assert.rejects(db.pool.query('select pg_sleep(3)'), (error: Error & { code?: string }) => error.code === '57014');
  assert.ok(Date.now() - started < 2_000, `cancelled after ${Date.now() - started} ms`);
  assert.equal((await db.pool.query('show statement_timeout')).rows[0].statement_timeout, '300ms');
});

test('migrations wait for another process holding the migration lock longer than the statement timeout, then give the timeout back', async () => {
  const other = await holder.pool.connect();
  await other.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
  const release = setTimeout(
    () => void other.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).finally(() => other.release()),
    1_000,
  );
  try {
    const result = await migrate(db.pool);
    assert.ok(result.applied.length > 0);
  } finally {
    clearTimeout(release);
  }
  // Both pooled sessions (the migration's among them) are back at the pool's default.
  const clients = await Promise.all([db.pool.connect(), db.pool.connect()]);
  try {
    for (const client of clients) assert.equal((await client.query('show statement_timeout')).rows[0].statement_timeout, '300ms');
  } finally {
    for (const client of clients) client.release();
  }
});

test('the runtime: its pool and pg-boss take DATABASE_STATEMENT_TIMEOUT_MS; an override (projections rebuild) lifts it', async () => {
  const config = await testConfig(url, { DATABASE_STATEMENT_TIMEOUT_MS: '4321' });
  const runtime = await startTestRuntime(config);
  try {
    assert.equal((await runtime.db.pool.query('show statement_timeout')).rows[0].statement_timeout, '4321ms');
    const sessions = await runtime.db.pool.query<{ application_name: string }>(
      `select distinct application_name from pg_stat_activity where datname = current_database() and application_name = 'hwr-boss'`,
    );
    assert.equal(sessions.rows.length, 1, 'pg-boss has sessions open');
    const boss = await runtime.boss.getDb().executeSql('show statement_timeout');
    assert.equal(boss.rows[0].statement_timeout, '4321ms');
  } finally {
    await runtime.stop();
  }
  const { startRuntime } = await import('../../src/runtime.ts');
  const { createLogger } = await import('../../src/logger.ts');
  const lifted = await startRuntime(config, createLogger('silent'), { workers: false, statementTimeoutMs: 0 });
  try {
    assert.equal((await lifted.db.pool.query('show statement_timeout')).rows[0].statement_timeout, '0');
  } finally {
    await lifted.stop();
  }
});
