// Authentication over real HTTP (spec part 5): both key headers, 401 with
// WWW-Authenticate for a missing, unknown or revoked key, and job visibility: another
// account's job does not exist for a key (docs/contract.md).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createApiKey, listApiKeys, revokeApiKey } from '../../src/use-cases/accounts.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, waitForState, type ApiResponse } from '../support/http-client.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl);
after(() => server.close());
const { client, runtime } = server;
const alice = await createCredentials(runtime, 'alice');
const bob = await createCredentials(runtime, 'bob');

function assertUnauthorized(response: ApiResponse, code: string): void {
  assert.equal(response.status, 401);
  assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer\b/);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.body.status, 401);
  assert.equal(response.body.code, code);
  assert.equal(response.body.type, `urn:hwr:problem:${code}`);
  assert.ok(response.body.title && response.body.detail);
}

describe('API key headers', () => {
  test('X-API-Key and Authorization: Bearer are equivalent', async () => {
    const { body: job } = await client.submit(await pagesZip(['1.jpg']), { key: alice.key, scheme: 'x-api-key' });
    const viaHeader = await client.get(`/v1/process-scan/${job.job_id}`, { key: alice.key, scheme: 'x-api-key' });
    const viaBearer = await client.get(`/v1/process-scan/${job.job_id}`, { key: alice.key, scheme: 'bearer' });
    assert.equal(viaHeader.status, 200);
    assert.equal(viaBearer.status, 200);
    assert.deepEqual(viaBearer.body, viaHeader.body);
    const submitted = await client.submit(await pagesZip(['1.jpg']), { key: alice.key, scheme: 'bearer' });
    assert.equal(submitted.status, 202);
  });

  test('the Bearer scheme name is case-insensitive (RFC 9110)', async () => {
    const response = await client.get('/v1/usage', null, { Authorization: `bearer ${alice.key}` });
    assert.equal(response.status, 200);
    assert.equal(response.body.account_id, alice.accountId);
  });

  test('two different keys in the two headers: 401, neither taken; the same key in both is fine', async () => {
    const both = await client.get('/v1/usage', null, { 'X-API-Key': alice.key, Authorization: 'Bearer hwr_not_this_one' });
    assertUnauthorized(both, 'invalid_api_key');
    assert.match(both.body.detail, /carry different keys/);
    const same = await client.get('/v1/usage', null, { 'X-API-Key': alice.key, Authorization: `Bearer ${alice.key}` });
    assert.equal(same.status, 200);
  });

  test('a missing key: 401 missing_api_key with WWW-Authenticate: Bearer', async () => {
    assertUnauthorized(await client.get('/v1/usage', null), 'missing_api_key');
    assertUnauthorized(await client.get('/v1/usage', null, { Authorization: 'Basic dXNlcjpwYXNz' }), 'missing_api_key');
    assertUnauthorized(await client.get('/v1/usage', null, { 'X-API-Key': '   ' }), 'missing_api_key');
  });

  test('an unknown key: 401 invalid_api_key, whichever header carries it', async () => {
    assertUnauthorized(await client.get('/v1/usage', { key: 'hwr_not-a-real-key' }), 'invalid_api_key');
    assertUnauthorized(await client.get('/v1/usage', { key: 'hwr_not-a-real-key', scheme: 'bearer' }), 'invalid_api_key');
    // A key that differs in one character from a real one.
    const altered = `${alice.key.slice(0, -1)}${alice.key.endsWith('A') ? 'B' : 'A'}`;
    assertUnauthorized(await client.get('/v1/usage', { key: altered }), 'invalid_api_key');
  });

  test('the problem body never echoes the key', async () => {
    const response = await client.get('/v1/usage', { key: 'hwr_secret-looking-value-123' });
    assert.ok(!response.raw.toString().includes('secret-looking-value'));
  });
});

describe('revoked keys', () => {
  test('a revoked key fails on the very next request; the account’s other keys keep working', async () => {
    const extra = await createApiKey(runtime.bus, 'alice', 'to revoke', 'test');
    assert.equal((await client.get('/v1/usage', { key: extra.key })).status, 200);
    await revokeApiKey(runtime.bus, extra.keyId, 'test');
    assertUnauthorized(await client.get('/v1/usage', { key: extra.key }), 'invalid_api_key');
    assertUnauthorized(await client.submit(await pagesZip(['1.jpg']), { key: extra.key, scheme: 'bearer' }), 'invalid_api_key');
    assert.equal((await client.get('/v1/usage', { key: alice.key })).status, 200);
    const listed = (await listApiKeys(runtime.db.pool, 'alice')).find((key) => key.id === extra.keyId);
    assert.ok(listed?.revoked_at, 'the listing shows the revocation');
  });

  test('last_used_at is recorded for a key that is used', async () => {
    const fresh = await createApiKey(runtime.bus, 'alice', 'usage', 'test');
    assert.equal((await listApiKeys(runtime.db.pool, 'alice')).find((key) => key.id === fresh.keyId)?.last_used_at, null);
    assert.equal((await client.get('/v1/usage', { key: fresh.key })).status, 200);
    // Written off the request path: poll until it lands.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const listed = (await listApiKeys(runtime.db.pool, 'alice')).find((key) => key.id === fresh.keyId);
      if (listed?.last_used_at) break;
      assert.ok(Date.now() < deadline, 'last_used_at recorded');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
});

describe('job visibility', () => {
  test('another account’s job is 404 on status, result, events and DELETE, and is left untouched', async () => {
    const { body: job } = await client.submit(await pagesZip(['1.jpg', '2.jpg']), { key: alice.key });
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/result'],
      ['GET', '/events'],
      ['DELETE', ''],
    ] as const) {
      const response = await client.request(method, `/v1/process-scan/${job.job_id}${suffix}`, { auth: { key: bob.key } });
      assert.equal(response.status, 404, `${method} ${suffix}`);
      assert.equal(response.body.code, 'job_not_found');
      const unknown = await client.request(method, `/v1/process-scan/00000000-0000-4000-8000-000000000001${suffix}`, {
        auth: { key: bob.key },
      });
      assert.deepEqual(
        { ...response.body, detail: '', instance: '' },
        { ...unknown.body, detail: '', instance: '' },
        'indistinguishable from a job that does not exist',
      );
    }
    const status = await client.get(`/v1/process-scan/${job.job_id}`, { key: alice.key });
    assert.equal(status.body.state, 'queued', 'bob’s DELETE did nothing');
  });

  test('every key of the creating account sees the job', async () => {
    const { body: job } = await client.submit(await pagesZip(['1.jpg']), { key: alice.key });
    const second = await createApiKey(runtime.bus, 'alice', 'second', 'test');
    assert.equal((await client.get(`/v1/process-scan/${job.job_id}`, { key: second.key })).status, 200);
  });

  test('usage counts only the calling account', async () => {
    // Workers that finish jobs (this file's server has none), each page corrected at 100 + 40 tokens.
    const worked = await startApiServer(databaseUrl, {
      pipelines: {
        page: testPagePipeline({
          worker: 'usage',
          correction: {
            provider: 'fake',
            model: 'fake-balanced',
            refusedLines: [],
            inputTokens: 100,
            outputTokens: 40,
            outcome: 'applied',
          },
        }),
        export: testExportPipeline(),
      },
    });
    const carol = await createCredentials(worked.runtime, 'carol');
    const dave = await createCredentials(worked.runtime, 'dave');
    const submit = async (key: string, pages: string[]) => {
      const { status, body } = await worked.client.submit(await pagesZip(pages), { key });
      assert.equal(status, 202);
      assert.equal((await waitForState(worked.client, { key }, body.job_id, ['done', 'failed'])).state, 'done');
    };
    await submit(carol.key, ['1.jpg', '2.jpg', '3.jpg']);
    await submit(dave.key, ['1.jpg', '2.jpg']);
    await submit(dave.key, ['1.jpg', '2.jpg', '3.jpg', '4.jpg', '5.jpg']);
    await submit(alice.key, ['1.jpg']);

    const usage = await client.get('/v1/usage', { key: carol.key });
    assert.equal(usage.status, 200);
    assert.equal(usage.body.account_id, carol.accountId);
    // Carol's one job of 3 pages, and nothing of dave's 7 pages or alice's.
    assert.equal(usage.body.jobs, 1);
    assert.equal(usage.body.pages, 3);
    assert.deepEqual(usage.body.correction, [
      { provider: 'fake', model: 'fake-balanced', pages: 3, input_tokens: 300, output_tokens: 120 },
    ]);
    const daves = await client.get('/v1/usage', { key: dave.key });
    assert.equal(daves.body.jobs, 2);
    assert.equal(daves.body.pages, 7);
    assert.equal(daves.body.correction[0].pages, 7);
    // Other accounts' billed pages do exist in the same period: they are left out, not absent.
    const all = await runtime.db.pool.query<{ pages: number }>('select sum(pages)::int as pages from billing');
    assert.ok(all.rows[0].pages >= 3 + 7 + 1, `${all.rows[0].pages} pages billed in all`);
  });
});
