// Limits over real HTTP (docs/contract.md, "Limits"): the per-key request rate (429
// rate_limited with Retry-After) and the per-account admission limits on unfinished jobs and
// unprocessed pages (429 too_many_active_jobs / too_many_queued_pages with Retry-After).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, type ApiResponse } from '../support/http-client.ts';

const databaseUrl = await createTestDatabase();
// Three requests at once, then one every ten seconds; no account limits. Ten seconds: the
// refusals below all come within it even on a loaded machine (they take milliseconds each), so
// none finds a token back by the clock; and a token is back after the Retry-After it gives.
const RATE_PER_SECOND = 0.1;
const rated = await startApiServer(databaseUrl, {
  env: {
    RATE_LIMIT_PER_SECOND: String(RATE_PER_SECOND),
    RATE_LIMIT_BURST: '3',
    MAX_ACTIVE_JOBS_PER_ACCOUNT: '0',
    MAX_QUEUED_PAGES_PER_ACCOUNT: '0',
  },
});
// No workers: jobs stay queued. Two unfinished jobs, six unprocessed pages per account; no rate limit.
const limited = await startApiServer(databaseUrl, {
  env: { RATE_LIMIT_PER_SECOND: '0', MAX_ACTIVE_JOBS_PER_ACCOUNT: '2', MAX_PAGES: '5', MAX_QUEUED_PAGES_PER_ACCOUNT: '6' },
});
after(async () => {
  await rated.close();
  await limited.close();
});

function assertTooMany(response: ApiResponse, code: string, retryAfter: string | ((value: string | null) => boolean)): void {
  assert.equal(response.status, 429, JSON.stringify(response.body));
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.body.code, code);
  assert.equal(response.body.status, 429);
  assert.equal(response.body.retryable, true);
  if (typeof retryAfter === 'string') assert.equal(response.headers.get('retry-after'), retryAfter);
  else assert.ok(retryAfter(response.headers.get('retry-after')), `Retry-After: ${response.headers.get('retry-after')}`);
}

/** The wait for the next token, in whole seconds rounded up: at least 1, at most one token's time (10 s). */
const NEXT_TOKEN = (retryAfter: string | null): boolean => {
  const seconds = Number(retryAfter);
  return Number.isInteger(seconds) && seconds >= 1 && seconds <= Math.ceil(1 / RATE_PER_SECOND);
};

describe('request rate per API key', () => {
  test('past its burst a key gets 429 rate_limited with Retry-After; other keys do not', async () => {
    const { client, runtime } = rated;
    const alice = await createCredentials(runtime);
    const bob = await createCredentials(runtime);
    const zip = await pagesZip(['1.jpg']);
    for (let i = 0; i < 3; i++) assert.equal((await client.get('/v1/usage', { key: alice.key })).status, 200);
    const refused = await client.get('/v1/usage', { key: alice.key });
    assertTooMany(refused, 'rate_limited', NEXT_TOKEN);
    assert.match(refused.body.detail, /3 requests at once or 0\.1 a second/);
    // Every authenticated route counts, the status read (which finds the key in its own query) included.
    assertTooMany(await client.get(`/v1/process-scan/${randomUUID()}`, { key: alice.key }), 'rate_limited', NEXT_TOKEN);
    // An upload refused unread: the connection is not reused for the rest of its body.
    const upload = await client.submit(zip, { key: alice.key });
    assertTooMany(upload, 'rate_limited', NEXT_TOKEN);
    assert.equal(upload.headers.get('connection'), 'close');
    assert.equal((await client.get('/v1/usage', { key: bob.key })).status, 200, 'another key of its own');
    // An unknown key is not rate limited, it is unauthorized.
    assert.equal((await client.get('/v1/usage', { key: 'hwr_unknown' })).status, 401);
    // The wait the last refusal named (counted from that refusal) brings a token back.
    const last = await client.get('/v1/usage', { key: alice.key });
    assertTooMany(last, 'rate_limited', NEXT_TOKEN);
    await new Promise((resolve) => setTimeout(resolve, Number(last.headers.get('retry-after')) * 1000));
    assert.equal((await client.get('/v1/usage', { key: alice.key })).status, 200, 'a token back after Retry-After');
  });
});

describe('unfinished jobs and unprocessed pages per account', () => {
  test('past either limit a submission gets 429 and no job; a finished job makes room; other accounts are not held', async () => {
    const { client, runtime } = limited;
    const carol = await createCredentials(runtime);
    const dave = await createCredentials(runtime);
    const jobs = async (accountId: string) =>
      (await runtime.db.pool.query('select job_id from job_status where account_id = $1', [accountId])).rows.length;

    const threePages = await pagesZip(['1.jpg', '2.jpg', '3.jpg']);
    const first = await client.submit(threePages, { key: carol.key }, {}, { 'Idempotency-Key': 'k1' });
    assert.equal(first.status, 202);
    // 3 queued + 4 > 6.
    const tooManyPages = await client.submit(await pagesZip(['1.jpg', '2.jpg', '3.jpg', '4.jpg']), { key: carol.key });
    assertTooMany(tooManyPages, 'too_many_queued_pages', '30');
    assert.match(tooManyPages.body.detail, /3 pages still to process; with this upload's 4/);
    assert.equal(await jobs(carol.accountId), 1);
    // 3 + 3 = 6: accepted; now both limits are reached.
    assert.equal((await client.submit(await pagesZip(['1.jpg', '2.jpg', '3.jpg']), { key: carol.key })).status, 202);
    const tooManyJobs = await client.submit(await pagesZip(['1.jpg']), { key: carol.key });
    assertTooMany(tooManyJobs, 'too_many_active_jobs', '30');
    assert.equal(tooManyJobs.headers.get('connection'), 'close', 'refused before the upload is read');
    assert.equal(await jobs(carol.accountId), 2);
    // The retry of an accepted submission is still answered with its job.
    const replay = await client.submit(threePages, { key: carol.key }, {}, { 'Idempotency-Key': 'k1' });
    assert.equal(replay.status, 202);
    assert.equal(replay.body.job_id, first.body.job_id);
    // Another account is not held back by carol's.
    assert.equal((await client.submit(await pagesZip(['1.jpg']), { key: dave.key })).status, 202);
    // A cancelled job is finished: room for one more.
    assert.equal((await client.delete(`/v1/process-scan/${first.body.job_id}`, { key: carol.key })).status, 200);
    assert.equal((await client.submit(await pagesZip(['1.jpg', '2.jpg']), { key: carol.key })).status, 202);
    assert.equal(await jobs(carol.accountId), 3);
  });

  test('submissions racing at the limit: exactly as many are accepted as fit', async () => {
    const { client, runtime } = limited;
    const erin = await createCredentials(runtime);
    const zip = await pagesZip(['1.jpg']);
    const answers = await Promise.all(Array.from({ length: 5 }, () => client.submit(zip, { key: erin.key })));
    const statuses = answers.map((answer) => answer.status).sort();
    assert.deepEqual(statuses, [202, 202, 429, 429, 429]);
  });
});
