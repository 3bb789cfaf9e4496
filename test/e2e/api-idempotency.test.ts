// Idempotency-Key on POST /v1/process-scan: the same key from the same account within
// 24 h returns the original job (same body, 202) without a second job; the same key
// with a different upload or options is a 409.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, type ApiResponse, type Auth } from '../support/http-client.ts';

const server = await startApiServer(await createTestDatabase());
after(() => server.close());
const { client, runtime } = server;
const alice = await createCredentials(runtime, 'alice');
const bob = await createCredentials(runtime, 'bob');
const aliceAuth: Auth = { key: alice.key };

async function jobsOf(accountId: string): Promise<string[]> {
  const result = await runtime.db.pool.query<{ job_id: string }>(
    'select job_id from job_status where account_id = $1 order by created_at',
    [accountId],
  );
  return result.rows.map((row) => row.job_id);
}

/** Every folder of stored files belongs to a job that exists. */
async function assertNoOrphanedFiles(): Promise<void> {
  const folders = await readdir(path.join(server.config.dataDir, 'blobs', 'jobs'));
  const jobs = await runtime.db.pool.query<{ job_id: string }>('select job_id from job_status');
  const known = new Set(jobs.rows.map((row) => row.job_id));
  assert.deepEqual(
    folders.filter((folder) => !known.has(folder)),
    [],
  );
}

async function jobEvents(): Promise<number> {
  const result = await runtime.db.pool.query<{ n: number }>(`select count(*)::int as n from events where type = 'JobQueued'`);
  return result.rows[0].n;
}

function submitWithKey(zip: Buffer, key: string, auth: Auth = aliceAuth, fields: Record<string, string> = {}): Promise<ApiResponse> {
  return client.submit(zip, auth, fields, { 'Idempotency-Key': key });
}

describe('Idempotency-Key', () => {
  test('the same key with the same upload: 202 with the original body, and no second job', async () => {
    const zip = await pagesZip(['1.jpg', '2.jpg']);
    const before = await jobEvents();
    const first = await submitWithKey(zip, 'order-1001');
    assert.equal(first.status, 202);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const second = await submitWithKey(zip, 'order-1001', { key: alice.key, scheme: 'bearer' });
    assert.equal(second.status, 202);
    assert.deepEqual(second.body, first.body, 'the same body');
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.headers.get('location'), first.headers.get('location'));
    assert.equal(await jobEvents(), before + 1, 'one JobQueued');
    await assertNoOrphanedFiles();
  });

  test('the replay answers with state queued even after the job moved on', async () => {
    const zip = await pagesZip(['1.jpg']);
    const first = await submitWithKey(zip, 'order-cancelled');
    assert.equal((await client.delete(first.body.status_url, aliceAuth)).body.state, 'cancelled');
    const replay = await submitWithKey(zip, 'order-cancelled');
    assert.equal(replay.status, 202);
    assert.deepEqual(replay.body, first.body);
    assert.equal((await client.get(first.body.status_url, aliceAuth)).body.state, 'cancelled', 'the status tells the truth');
  });

  test('the same key with a different upload: 409 idempotency_key_reused, naming the original job', async () => {
    const first = await submitWithKey(await pagesZip(['1.jpg']), 'order-1002');
    assert.equal(first.status, 202);
    const conflict = await submitWithKey(await pagesZip(['1.jpg', '2.jpg']), 'order-1002');
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.code, 'idempotency_key_reused');
    assert.match(conflict.body.detail, new RegExp(first.body.job_id));
  });

  test('the same key with the same upload but other options: 409', async () => {
    const zip = await pagesZip(['1.jpg']);
    assert.equal((await submitWithKey(zip, 'order-1003', aliceAuth, { llm_tier: 'cheap' })).status, 202);
    const conflict = await submitWithKey(zip, 'order-1003', aliceAuth, { llm_tier: 'best' });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.code, 'idempotency_key_reused');
  });

  test('keys are per account: another account’s identical key makes its own job', async () => {
    const zip = await pagesZip(['1.jpg']);
    const mine = await submitWithKey(zip, 'shared-key');
    const theirs = await submitWithKey(zip, 'shared-key', { key: bob.key });
    assert.equal(theirs.status, 202);
    assert.notEqual(theirs.body.job_id, mine.body.job_id);
    assert.deepEqual(await jobsOf(bob.accountId), [theirs.body.job_id]);
  });

  test('concurrent requests with one key make one job', async () => {
    const zip = await pagesZip(['1.jpg', '2.jpg', '3.jpg']);
    const before = (await jobsOf(alice.accountId)).length;
    const responses = await Promise.all(Array.from({ length: 5 }, () => submitWithKey(zip, 'order-race')));
    assert.deepEqual(
      responses.map((response) => response.status),
      Array(5).fill(202),
    );
    assert.equal(new Set(responses.map((response) => response.body.job_id)).size, 1);
    assert.equal((await jobsOf(alice.accountId)).length, before + 1);
    // The losers stored their pages before losing the race; they are removed again.
    await assertNoOrphanedFiles();
  });

  test('after 24 h the key is free again: a new job, which then owns the key', async () => {
    const zip = await pagesZip(['1.jpg']);
    const first = await submitWithKey(zip, 'order-old');
    // The key was used 25 hours ago.
    await runtime.db.pool.query(`update idempotency_keys set created_at = now() - interval '25 hours' where idempotency_key = 'order-old'`);
    const later = await submitWithKey(await pagesZip(['1.jpg', '2.jpg']), 'order-old');
    assert.equal(later.status, 202);
    assert.notEqual(later.body.job_id, first.body.job_id);
    assert.equal(later.headers.get('idempotent-replayed'), null);
    const replay = await submitWithKey(await pagesZip(['1.jpg', '2.jpg']), 'order-old');
    assert.equal(replay.body.job_id, later.body.job_id);
  });

  test('without the header every submission is a new job', async () => {
    const zip = await pagesZip(['1.jpg']);
    const a = await client.submit(zip, aliceAuth);
    const b = await client.submit(zip, aliceAuth);
    assert.notEqual(a.body.job_id, b.body.job_id);
  });

  test('a malformed key: 400 invalid_idempotency_key', async () => {
    const zip = await pagesZip(['1.jpg']);
    const tooLong = await submitWithKey(zip, 'k'.repeat(256));
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.code, 'invalid_idempotency_key');
    assert.equal((await submitWithKey(zip, 'k'.repeat(255))).status, 202);
  });
});
