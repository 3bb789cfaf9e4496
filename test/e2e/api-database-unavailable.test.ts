// The API and the portal while the database cannot be reached: a request whose queries get no
// answer (the network cut the database off) or no connection (the database stopped) is answered
// 503 (the API's `database_unavailable`, the portal's page saying so) with Retry-After, not a
// 500, within the database timeouts; once the database is back, the same request succeeds.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, startApiServer, type Auth } from '../support/http-client.ts';
import { portalUser } from '../support/portal-client.ts';
import { startSilentProxy } from '../support/silent-proxy.ts';

const proxy = await startSilentProxy(await createTestDatabase());
const service = await startApiServer(proxy.url, {
  // Short enough for a test, long enough that a slow query on a loaded machine is not an outage.
  env: { DATABASE_STATEMENT_TIMEOUT_MS: '2000', DATABASE_QUERY_TIMEOUT_MS: '3000', DATABASE_CONNECT_TIMEOUT_MS: '3000' },
});
after(async () => {
  // The proxy first: the cut-off connections would hold the service's stop for its bound.
  await proxy.close();
  await service.close();
});
const auth: Auth = { key: (await createCredentials(service.runtime, 'outage')).key };

test('the database cut off: a request is answered 503 database_unavailable with Retry-After, then 200 once it is back', async () => {
  assert.equal((await service.client.get('/v1/usage', auth)).status, 200);
  proxy.partition();
  try {
    const started = Date.now();
    const answer = await service.client.get('/v1/usage', auth);
    const waited = Date.now() - started;
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'database_unavailable');
    assert.equal(answer.body.retryable, true);
    assert.equal(answer.headers.get('retry-after'), '5');
    assert.equal(answer.headers.get('content-type'), 'application/problem+json');
    assert.ok(waited < 10_000, `answered after ${waited} ms`);
  } finally {
    proxy.heal();
  }
  // The connections idle in the pool at the cut were retired with the first one found dead, so the
  // next request goes through at once.
  assert.equal((await service.client.get('/v1/usage', auth)).status, 200);
});

test('the database cut off: a portal page is a 503 that says so, with Retry-After, then the page once it is back', async () => {
  const user = await portalUser(service.runtime, service.baseUrl, 'outage', 'owner@example.org');
  assert.equal((await user.get('/portal/jobs')).status, 200);
  proxy.partition();
  try {
    const page = await user.get('/portal/jobs');
    assert.equal(page.status, 503, page.text);
    assert.equal(page.headers.get('retry-after'), '5');
    assert.match(page.text, /cannot reach its database at the moment/);
  } finally {
    proxy.heal();
  }
  assert.equal((await user.get('/portal/jobs')).status, 200);
});
