// Which errors say "the database is away" (a task then waits and runs again, spending no attempt)
// and which are the work's own failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDatabaseUnavailable } from '../../src/db/database.ts';

test('database shutdown, start-up and connection errors are outages; query errors and pipeline errors are not', () => {
  const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
  assert.ok(isDatabaseUnavailable(withCode('the database system is shutting down', '57P03')));
  assert.ok(isDatabaseUnavailable(withCode('terminating connection due to administrator command', '57P01')));
  assert.ok(isDatabaseUnavailable(withCode('connection failure', '08006')));
  assert.ok(isDatabaseUnavailable(withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')));
  assert.ok(isDatabaseUnavailable(new Error('Connection terminated unexpectedly')));
  assert.ok(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect')));
  assert.ok(!isDatabaseUnavailable(withCode('duplicate key value violates unique constraint', '23505')));
  assert.ok(!isDatabaseUnavailable(withCode('canceling statement due to statement timeout', '57014')));
  assert.ok(!isDatabaseUnavailable(new Error('the test pipeline cannot read this page')));
  assert.ok(!isDatabaseUnavailable('not an error'));
});
