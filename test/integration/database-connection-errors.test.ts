// A pooled connection that the database ends (a restart, an administrator) is logged, never
// swallowed, whether it was idle in the pool or checked out for a transaction, and the process
// goes on (docs/reliability.md).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { checkOut, openDatabase } from '../../src/db/database.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createTestDatabase } from '../support/database.ts';

const lines: Array<Record<string, unknown>> = [];
const destination = new Writable({
  write(chunk, _encoding, done) {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});
const url = await createTestDatabase();
const db = openDatabase(url, { max: 2 }, createLogger('info', { destination }));
const admin = openDatabase(url, { max: 1 });
after(() => Promise.all([db.close(), admin.close()]));

async function terminate(pid: number): Promise<void> {
  await admin.pool.query('select pg_terminate_backend($1)', [pid]);
}

test('a checked-out connection the database ends is logged as lost, checked out, and its query fails', async () => {
  const client = await checkOut(db.pool);
  const pid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid as number;
  const lost = once(db.pool, 'error');
  await terminate(pid);
  const [error] = await lost;
  assert.equal((error as { code?: string }).code, '57P01');
  await assert.rejects(client.query('select 1'), { message: 'Client has encountered a connection error and is not queryable' });
  client.release(true);
  const line = lines.find((entry) => entry.msg === 'database connection lost' && entry.checked_out === true);
  assert.ok(line, JSON.stringify(lines));
  assert.equal(line.component, 'pg-pool');
  assert.equal(line.level, 40);
  assert.equal(line.code, '57P01');
  // The pool goes on with a new connection.
  assert.equal((await db.pool.query('select 1 as one')).rows[0].one, 1);
});

test('an idle pooled connection the database ends is logged as lost, not checked out', async () => {
  const client = await checkOut(db.pool);
  const pid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid as number;
  client.release();
  const before = lines.length;
  const lost = once(db.pool, 'error');
  await terminate(pid);
  await lost;
  const line = lines.slice(before).find((entry) => entry.msg === 'database connection lost');
  assert.ok(line, JSON.stringify(lines.slice(before)));
  assert.equal(line.checked_out, false);
  assert.equal((await db.pool.query('select 2 as two')).rows[0].two, 2);
});
