// PostgreSQL timeouts (docs/reliability.md): every session of the service's pools has
// DATABASE_STATEMENT_TIMEOUT_MS as its statement_timeout and DATABASE_QUERY_TIMEOUT_MS as the
// client's limit on waiting for an answer, and the operations that legitimately run long
// (migrations, waiting for another process's migrations, `hwr projections rebuild/verify`) lift both.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type pg from 'pg';
import { type Database, isDatabaseUnavailable, openDatabase } from '../../src/db/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { MIGRATION_LOCK } from '../../src/store/locks.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';
import { type SilentProxy, startSilentProxy } from '../support/silent-proxy.ts';
import { waitUntil } from '../support/wait.ts';

const url = await createTestDatabase();
const db = openDatabase(url, { max: 2, connectTimeoutMs: 5_000, statementTimeoutMs: 300, queryTimeoutMs: 600 });
const holder = openDatabase(url, { max: 1 });
after(() => Promise.all([db.close(), holder.close()]));

test('a statement longer than the statement timeout is cancelled by PostgreSQL', async () => {
  // A query timeout far beyond the statement's, so that the server's cancel is what answers even
  // when this process is slow to read it.
  const patient = openDatabase(url, { max: 1, connectTimeoutMs: 5_000, statementTimeoutMs: 300, queryTimeoutMs: 10_000 });
  try {
    const started = Date.now();
    await assert.rejects(patient.pool.query('select pg_sleep(3)'), (error: Error & { code?: string }) => error.code === '57014');
    // Cut short: the statement asks for 3 s.
    assert.ok(Date.now() - started < 3_000, `cancelled after ${Date.now() - started} ms`);
    assert.equal((await patient.pool.query('show statement_timeout')).rows[0].statement_timeout, '300ms');
  } finally {
    await patient.close();
  }
});

test('migrations wait for another process holding the migration lock longer than the statement and query timeouts, then give the timeout back', async () => {
  const other = await holder.pool.connect();
  await other.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
  const watcher = openDatabase(url, { max: 1 });
  let settled = false;
  const migrating = migrate(db.pool).finally(() => {
    settled = true;
  });
  migrating.catch(() => {});
  try {
    // The migration's session is queued on the lock (a lock not granted in pg_locks; a bigint key
    // is classid 0, objid the key, objsubid 1) …
    await waitUntil('the migration to wait for the migration lock', async () => {
      const waiting = await watcher.pool.query(
        `select 1 from pg_locks where locktype = 'advisory' and not granted and classid = 0 and objid = $1 and objsubid = 1
           and database = (select oid from pg_database where datname = current_database())`,
        [MIGRATION_LOCK],
      );
      return waiting.rows.length === 1;
    });
    // … and is still waiting after both its pool's timeouts (600 ms, the longer) have passed twice over.
    await new Promise((resolve) => setTimeout(resolve, 2 * 600));
    assert.equal(settled, false, 'the migration still waits, past the statement and query timeouts');
  } finally {
    await other.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    other.release();
    await watcher.close();
  }
  const result = await migrating;
  assert.ok(result.applied.length > 0);
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
    // DATABASE_QUERY_TIMEOUT_MS defaults to the statement timeout plus 10 s, for both pools.
    assert.equal(runtime.db.pool.options.query_timeout, 14_321);
    assert.equal((runtime.boss.getDb() as unknown as { pool: pg.Pool }).pool.options.query_timeout, 14_321);
    const sessions = await runtime.db.pool.query<{ application_name: string }>(
      `select distinct application_name from pg_stat_activity where datname = current_database() and application_name = 'hwr-boss'`,
    );
    assert.equal(sessions.rows.length, 1, 'pg-boss has sessions open');
    const boss = await runtime.boss.getDb().executeSql('show statement_timeout');
    assert.equal(boss.rows[0].statement_timeout, '4321ms');
  } finally {
    await runtime.stop();
  }
  const { startRuntime } = await import('../../src/runtime/runtime.ts');
  const { createLogger } = await import('../../src/platform/logger.ts');
  const lifted = await startRuntime(config, createLogger('silent'), { workers: false, statementTimeoutMs: 0 });
  try {
    assert.equal((await lifted.db.pool.query('show statement_timeout')).rows[0].statement_timeout, '0');
    assert.equal(lifted.db.pool.options.query_timeout, undefined);
  } finally {
    await lifted.stop();
  }
});

/** A pool of `max` connections through a proxy that can cut them off (statement timeout 300 ms, query timeout 800 ms); both closed after `use`. */
async function behindProxy(max: number, use: (quiet: Database, proxy: SilentProxy) => Promise<void>): Promise<void> {
  const proxy = await startSilentProxy(url);
  const quiet = openDatabase(proxy.url, { max, connectTimeoutMs: 5_000, statementTimeoutMs: 300, queryTimeoutMs: 800 });
  try {
    await use(quiet, proxy);
  } finally {
    await quiet.close();
    await proxy.close();
  }
}

test('a query whose answer never comes (a silent peer) fails after the query timeout as the database being unavailable; the pool replaces the connection', () =>
  behindProxy(1, async (quiet, proxy) => {
    await quiet.pool.query('select 1');
    proxy.partition();
    const started = Date.now();
    await assert.rejects(
      quiet.pool.query('select 1'),
      (error: Error) => /Query read timeout/.test(error.message) && isDatabaseUnavailable(error),
    );
    assert.ok(Date.now() - started >= 700, 'given up by the client-side timeout');
    proxy.heal();
    assert.equal((await quiet.pool.query('select 2 as two')).rows[0].two, 2);
    assert.equal(proxy.accepted(), 2, 'the silent connection was discarded, a new one opened');
  }));

test('once a query gets no answer, the connections idle in the pool are retired too: the next queries after the database is back run on new ones', () =>
  behindProxy(3, async (quiet, proxy) => {
    // Three connections, idle in the pool.
    await Promise.all([1, 2, 3].map(() => quiet.pool.query('select pg_sleep(0.05)')));
    assert.equal(quiet.pool.idleCount, 3);
    proxy.partition();
    await assert.rejects(quiet.pool.query('select 1'), /Query read timeout/);
    proxy.heal();
    // Without the retirement each of the two other cut-off connections would fail a query too.
    for (const n of [2, 3, 4]) assert.equal((await quiet.pool.query(`select ${n} as n`)).rows[0].n, n);
    assert.ok(proxy.accepted() >= 4, `${proxy.accepted()} connections`);
  }));

test('a transaction whose query gets no answer is given up after one query timeout (no rollback queued behind it), and its connection is discarded, not pooled', () =>
  behindProxy(1, async (quiet, proxy) => {
    let started = Date.now();
    await assert.rejects(
      quiet.transaction(async (client) => {
        await client.query('select pg_advisory_xact_lock(4242)');
        // Timed from the cut: connecting and starting the transaction are not what is measured.
        started = Date.now();
        proxy.partition();
        await client.query('select 1');
      }),
      /Query read timeout/,
    );
    const waited = Date.now() - started;
    assert.ok(waited < 1_500, `gave up after ${waited} ms: a rollback behind the unanswered query would wait another 800 ms`);
    proxy.heal();
    // The next transaction runs on a new connection; the cut-off one, still open with its
    // transaction, is the server's keepalives' to end (the next test), not the pool's to reuse.
    assert.equal((await quiet.transaction((client) => client.query('select 3 as three'))).rows[0].three, 3);
    assert.equal(proxy.accepted(), 2);
  }));

test('a session idle inside a transaction past DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS is ended by the server, its locks released; its next query is an outage', async () => {
  // As a transaction whose client was cut off behind a proxy that keeps the server's end alive.
  const idle = openDatabase(url, { max: 1, connectTimeoutMs: 5_000, idleInTransactionTimeoutMs: 300 });
  const other = openDatabase(url, { max: 1 });
  try {
    assert.equal((await idle.pool.query('show idle_in_transaction_session_timeout')).rows[0].idle_in_transaction_session_timeout, '300ms');
    const client = await idle.pool.connect();
    client.on('error', () => {}); // the server's goodbye arrives between queries
    await client.query('begin');
    await client.query('select pg_advisory_xact_lock(4343)');
    const locked = () => other.pool.query<{ got: boolean }>('select pg_try_advisory_lock(4343) as got');
    assert.equal((await locked()).rows[0].got, false, 'held while the transaction is open');
    // Released once the server ends the idle session (after its 300 ms).
    await waitUntil('the lock released by the server ending the idle session', async () => (await locked()).rows[0].got);
    const error = await client.query('select 1').catch((caught: unknown) => caught);
    assert.ok(error instanceof Error, String(error));
    assert.equal(isDatabaseUnavailable(error), true, (error as Error).message);
    client.release(true);
  } finally {
    await Promise.all([idle.close(), other.close()]);
  }
});

test('the embedded PostgreSQL sets TCP keepalives on client sessions: probes after 10 s idle, every 5 s, 3 of them', async () => {
  // So a session whose client vanished ends within about 25 s (10 + 3 × 5). That end itself is not
  // shown here: it needs a peer that drops packets, which a test on one machine cannot make.
  // Shown for a TCP session (a Unix socket has no keepalive, and reports 0).
  const settings = await db.pool.query<{ name: string; setting: string }>(
    `select name, setting from pg_settings where name in ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count') order by name`,
  );
  assert.deepEqual(
    settings.rows.map((row) => `${row.name}=${row.setting}`),
    ['tcp_keepalives_count=3', 'tcp_keepalives_idle=10', 'tcp_keepalives_interval=5'],
  );
});
