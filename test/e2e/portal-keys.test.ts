// Settings → API keys over real HTTP: a user invited with the real `hwr users invite`, the key
// shown once and working against the API, its label escaped, revocation effective on the next
// API request, and another account's user refused.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { MAX_ACTIVE_API_KEYS } from '../../domain/account.ts';
import { accountStreamId } from '../../domain/events.ts';
import { createAccount, createApiKey } from '../../src/use-cases/accounts.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { createTestDatabase } from '../support/database.ts';
import { startApiServer } from '../support/http-client.ts';
import { csrfTokenOf, PortalClient, type PortalResponse, portalUser, TEST_PASSWORD } from '../support/portal-client.ts';

const root = path.resolve(import.meta.dirname, '../..');
const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl);
after(() => server.close());
const { runtime, baseUrl } = server;
const acme = await createAccount(runtime.bus, 'acme', 'test');
const rival = await createAccount(runtime.bus, 'rival', 'test');
const MARKUP = `<script>alert("x")</script><img src=x onerror=alert(1)>`;

function hwr(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl, BASE_URL: baseUrl, LOG_LEVEL: 'silent' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const apiStatus = async (key: string) => (await fetch(`${baseUrl}/v1/usage`, { headers: { 'X-API-Key': key } })).status;
const newKeyOf = (text: string) => /<p class="secret" id="new-key">([^<]+)<\/p>/.exec(text)?.[1];
/** The page a form's POST leads to (Post/Redirect/Get: every form answers 303), as a browser shows it. */
const shown = async (c: PortalClient, response: PortalResponse): Promise<PortalResponse> => {
  assert.equal(response.status, 303, response.text);
  return c.get(response.headers.get('location')!);
};

describe('portal API keys', () => {
  let user: PortalClient;

  test('hwr users invite prints a setup link alone on stdout; the user sets a password and signs in', async () => {
    const run = await hwr(['users', 'invite', '--account', 'acme', '--email', 'keys@example.org']);
    assert.equal(run.code, 0, run.stderr);
    const link = run.stdout.trim();
    assert.match(link, new RegExp(`^${baseUrl}/portal/setup\\?token=[\\w-]{43}$`));
    assert.match(run.stderr, /single use, expires \d{4}-/);
    user = new PortalClient(baseUrl);
    const setupPage = await user.get(link.slice(baseUrl.length));
    const token = new URL(link).searchParams.get('token')!;
    const set = await user.post('/portal/setup', {
      _csrf: csrfTokenOf(setupPage.text, '/portal/setup'),
      token,
      password: TEST_PASSWORD,
      password2: TEST_PASSWORD,
    });
    assert.equal(set.status, 303);
    assert.equal((await user.signIn('keys@example.org', TEST_PASSWORD)).status, 303);
    const listed = await hwr(['users', 'list', '--account', 'acme']);
    assert.equal(JSON.parse(listed.stdout.trim()).email, 'keys@example.org');
  });

  test('a new key is shown once, works against the API, and its markup label is escaped everywhere', async () => {
    const created = await shown(user, await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: MARKUP }));
    assert.equal(created.status, 200);
    const key = newKeyOf(created.text);
    assert.match(key ?? '', /^hwr_[\w-]{40}$/);
    assert.equal(await apiStatus(key!), 200);
    for (const page of [created.text, (await user.get('/portal/settings/keys')).text]) {
      assert.ok(!page.includes(MARKUP), 'the label is not raw markup');
      assert.ok(!page.includes('<img src=x'), 'no injected element');
      assert.ok(page.includes('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;'), 'the label is shown escaped');
    }
    const listing = await user.get('/portal/settings/keys');
    assert.ok(!listing.text.includes(key!), 'the key is shown once only');
    assert.ok(listing.text.includes(`${key!.slice(0, 12)}…`), 'its prefix is listed');
    const events = await readStream(runtime.db.pool, accountStreamId(acme.accountId));
    const keyCreated = events.find((event) => event.type === 'ApiKeyCreated')!;
    assert.match(String(keyCreated.metadata.actor), /^user:[0-9a-f-]{36}$/);
  });

  test('an empty label is refused; revoking makes the API answer 401 on the next request', async () => {
    assert.equal((await shown(user, await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: '   ' }))).status, 400);
    const created = await shown(user, await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'to revoke' }));
    const key = newKeyOf(created.text)!;
    assert.equal(await apiStatus(key), 200);
    const { rows } = await runtime.db.pool.query<{ key_id: string }>(`select key_id from api_keys where label = 'to revoke'`);
    const action = `/portal/settings/keys/${rows[0].key_id}/revoke`;
    const revoked = await shown(user, await user.submit('/portal/settings/keys', action, {}));
    assert.equal(revoked.status, 200);
    assert.match(revoked.text, /The key is revoked/);
    assert.equal(await apiStatus(key), 401);
    const events = await readStream(runtime.db.pool, accountStreamId(acme.accountId));
    assert.ok(events.some((event) => event.type === 'ApiKeyRevoked' && (event.data as { keyId: string }).keyId === rows[0].key_id));
  });

  test('an account at its 100 active keys is refused another, in the portal and by hwr keys create, until one is revoked', async () => {
    await createAccount(runtime.bus, 'full', 'test');
    const owner = await portalUser(runtime, baseUrl, 'full', 'owner@full.example');
    const keys = [];
    for (let i = 0; i < MAX_ACTIVE_API_KEYS; i++) keys.push(await createApiKey(runtime.bus, 'full', `scanner ${i}`));
    const refused = await shown(owner, await owner.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'one more' }));
    assert.equal(refused.status, 409);
    assert.match(refused.text, /as many active API keys as it may \(100\); revoke one first/);
    const cli = await hwr(['keys', 'create', '--account', 'full', '--label', 'one more']);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /^hwr keys: The account has as many active API keys as it may \(100\); revoke one first\.$/m);
    assert.equal(cli.stdout, '');
    const revoked = await shown(owner, await owner.submit('/portal/settings/keys', `/portal/settings/keys/${keys[0].keyId}/revoke`, {}));
    assert.equal(revoked.status, 200);
    const created = await shown(owner, await owner.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'one more' }));
    assert.equal(created.status, 200);
    assert.equal(await apiStatus(newKeyOf(created.text)!), 200);
  });

  test("another account's user neither sees nor revokes this account's keys", async () => {
    const rivalKey = await createApiKey(runtime.bus, 'rival', 'rival secret label', 'test');
    const acmeListing = await user.get('/portal/settings/keys');
    assert.ok(!acmeListing.text.includes('rival secret label'));
    const token = csrfTokenOf(acmeListing.text, '/portal/settings/keys');
    const refused = await user.post(`/portal/settings/keys/${rivalKey.keyId}/revoke`, { _csrf: token });
    assert.equal(refused.status, 404);
    assert.equal(await apiStatus(rivalKey.key), 200);
    // And the other way round.
    const rivalUser = await portalUser(runtime, baseUrl, 'rival', 'rival@example.org');
    const { rows } = await runtime.db.pool.query<{ key_id: string }>(
      `select key_id from api_keys where account_id = $1 and revoked_at is null`,
      [acme.accountId],
    );
    const rivalPage = await rivalUser.get('/portal/settings/keys');
    for (const row of rows) assert.ok(!rivalPage.text.includes(row.key_id));
    const attempt = await rivalUser.post(`/portal/settings/keys/${rows[0].key_id}/revoke`, {
      _csrf: csrfTokenOf(rivalPage.text, '/portal/settings/keys'),
    });
    assert.equal(attempt.status, 404);
    assert.ok(rival.accountId);
  });

  test('a signed-out visitor cannot create or revoke keys', async () => {
    const visitor = new PortalClient(baseUrl);
    assert.equal((await visitor.post('/portal/settings/keys', { label: 'x' })).status, 403);
    assert.equal((await visitor.get('/portal/settings/keys')).status, 303);
  });
});
