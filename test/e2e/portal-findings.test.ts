// Issue 42's findings on the portal, over real HTTP: every form answers its POST with a redirect
// (Post/Redirect/Get: a reload neither makes a second key nor sends a password again; the one-time
// key comes from a flash bound to the session), a new session id on a password change, a deep
// link kept through sign-in (and no open redirect), uploaded names with bidirectional controls
// isolated and made visible, and the page order rule on the upload form.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { accountStreamId } from '../../domain/events.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { inviteUser } from '../../src/use-cases/users.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, scanForm, startApiServer } from '../support/http-client.ts';
import { csrfTokenOf, PortalClient, type PortalResponse, portalUser, TEST_PASSWORD } from '../support/portal-client.ts';

const databaseUrl = await createTestDatabase();
// TRUST_PROXY: each test speaks from its own X-Forwarded-For address (throttling per address).
const server = await startApiServer(databaseUrl, { env: { TRUST_PROXY: '1' } });
after(() => server.close());
const { runtime, baseUrl, client } = server;
const acme = await createCredentials(runtime, 'acme');
let addresses = 0;
const from = () => ({ 'X-Forwarded-For': `203.0.113.${++addresses}` });
const NEW_PASSWORD = 'a brand new password';
const newKeyOf = (text: string) => /<p class="secret" id="new-key">([^<]+)<\/p>/.exec(text)?.[1];
const secretOf = (text: string) => /<p class="secret" id="webhook-secret">([^<]+)<\/p>/.exec(text)?.[1];
const errorOf = (text: string) => /<p class="notice error"[^>]*>([^<]*)</.exec(text)?.[1];
const accountEvents = () => readStream(runtime.db.pool, accountStreamId(acme.accountId));
const failedAttempts = async (email: string) =>
  (await runtime.db.pool.query('select count(*)::int as n from portal_sign_in_attempts where email = $1 and not ok', [email])).rows[0]
    .n as number;

/** The answer to a POST is a 303 to `location`; the page it leads to, as the browser gets it. */
async function redirected(c: PortalClient, response: PortalResponse, location: string | RegExp): Promise<PortalResponse> {
  assert.equal(response.status, 303, `a redirect, not a page: ${response.status} ${response.text.slice(0, 300)}`);
  const target = response.headers.get('location') ?? '';
  if (typeof location === 'string') assert.equal(target, location);
  else assert.match(target, location);
  return c.get(target);
}

describe('Post/Redirect/Get: every form answers with a redirect', () => {
  test('a new API key: 303, shown once on the page it leads to; reloading that page shows it no more and makes no key', async () => {
    const user = await portalUser(runtime, baseUrl, 'acme', 'prg-keys@example.org', TEST_PASSWORD, from());
    const created = await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'reloaded' });
    assert.ok(!created.text.includes('hwr_'), 'the POST answer carries no key');
    // Until it is shown, the flash is at rest sealed: the key is nowhere in the table in clear.
    const atRest = await runtime.db.pool.query('select * from portal_flashes');
    assert.ok(atRest.rows.length >= 1, 'the flash is stored server-side');
    const shown = await redirected(user, created, '/portal/settings/keys');
    assert.equal(shown.status, 200);
    const key = newKeyOf(shown.text);
    assert.match(key ?? '', /^hwr_[\w-]{40}$/);
    assert.ok(!JSON.stringify(atRest.rows).includes(key!), 'the key is not stored in clear');
    for (const row of atRest.rows) for (const value of Object.values(row)) if (Buffer.isBuffer(value)) assert.ok(!value.includes(key!));
    const reloaded = await user.get('/portal/settings/keys');
    assert.equal(newKeyOf(reloaded.text), undefined, 'shown once');
    const made = (await accountEvents()).filter(
      (event) => event.type === 'ApiKeyCreated' && (event.data as { label: string }).label === 'reloaded',
    );
    assert.equal(made.length, 1);
  });

  test('a password change: 303; the page after it says so, its reload sends no password and counts no failed sign-in', async () => {
    const email = 'prg-password@example.org';
    const user = await portalUser(runtime, baseUrl, 'acme', email, TEST_PASSWORD, from());
    const changed = await user.submit('/portal/settings/account', '/portal/settings/password', {
      current: TEST_PASSWORD,
      password: NEW_PASSWORD,
    });
    const shown = await redirected(user, changed, '/portal/settings/account');
    assert.equal(shown.status, 200);
    assert.match(shown.text, /Your password is changed/);
    const reloaded = await user.get('/portal/settings/account');
    assert.doesNotMatch(reloaded.text, /Your password is changed/);
    assert.equal(await failedAttempts(email), 0);
    // A wrong current password: 303 too, the page says why with 400, and the failure counts once.
    const wrong = await user.submit('/portal/settings/account', '/portal/settings/password', {
      current: 'not it at all',
      password: 'x'.repeat(20),
    });
    const refused = await redirected(user, wrong, '/portal/settings/account');
    assert.equal(refused.status, 400);
    assert.match(errorOf(refused.text) ?? '', /current password is not right/);
    assert.equal((await user.get('/portal/settings/account')).status, 200);
    assert.equal(await failedAttempts(email), 1);
  });

  test('a failed sign-in: 303 back to the sign-in page, which says why with 401 and keeps the email; its reload counts nothing', async () => {
    const email = 'prg-sign-in@example.org';
    await portalUser(runtime, baseUrl, 'acme', email, TEST_PASSWORD, from());
    const c = new PortalClient(baseUrl, from());
    const wrong = await c.signIn(email, 'not the password at all');
    const shown = await redirected(c, wrong, '/portal/sign-in');
    assert.equal(shown.status, 401);
    assert.equal(errorOf(shown.text), 'The email or the password is not right.');
    assert.match(shown.text, /name="email"[^>]*value="prg-sign-in@example\.org"/);
    const reloaded = await c.get('/portal/sign-in');
    assert.equal(reloaded.status, 200);
    assert.equal(errorOf(reloaded.text), undefined);
    assert.equal(await failedAttempts(email), 1);
    // Throttled: the page it leads to answers 429 with Retry-After.
    for (let i = 0; i < 4; i++) await c.signIn(email, `wrong ${i}`);
    const throttled = await redirected(c, await c.signIn(email, TEST_PASSWORD), '/portal/sign-in');
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '900');
    assert.match(errorOf(throttled.text) ?? '', /Too many failed sign-ins/);
  });

  test('every other form redirects too: revoke, webhook reveal and rotate, a refused label, setup, a refused upload', async () => {
    const user = await portalUser(runtime, baseUrl, 'acme', 'prg-forms@example.org', TEST_PASSWORD, from());
    const emptyLabel = await redirected(
      user,
      await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: ' ' }),
      '/portal/settings/keys',
    );
    assert.equal(emptyLabel.status, 400);
    assert.match(errorOf(emptyLabel.text) ?? '', /A label has 1 to 100 characters/);
    await redirected(
      user,
      await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'to revoke' }),
      '/portal/settings/keys',
    );
    const { rows } = await runtime.db.pool.query<{ key_id: string }>(`select key_id from api_keys where label = 'to revoke'`);
    const revoked = await redirected(
      user,
      await user.submit('/portal/settings/keys', `/portal/settings/keys/${rows[0].key_id}/revoke`, {}),
      '/portal/settings/keys',
    );
    assert.match(revoked.text, /The key is revoked/);

    const wrongPassword = await redirected(
      user,
      await user.submit('/portal/settings/webhook', '/portal/settings/webhook/reveal', { password: 'not the password' }),
      '/portal/settings/webhook',
    );
    assert.equal(wrongPassword.status, 403);
    const revealed = await redirected(
      user,
      await user.submit('/portal/settings/webhook', '/portal/settings/webhook/reveal', { password: TEST_PASSWORD }),
      '/portal/settings/webhook',
    );
    assert.equal(secretOf(revealed.text), acme.webhookSecret);
    assert.equal(secretOf((await user.get('/portal/settings/webhook')).text), undefined, 'shown once');
    const rotated = await redirected(
      user,
      await user.submit('/portal/settings/webhook', '/portal/settings/webhook/rotate', { password: TEST_PASSWORD }),
      '/portal/settings/webhook',
    );
    assert.match(secretOf(rotated.text) ?? '', /^[0-9a-f]{64}$/);

    // The setup link: a refusal back to the link's page (400), the password set on to sign-in.
    const invitation = await inviteUser(runtime.bus, 'acme', 'prg-setup@example.org', baseUrl, 'test');
    const setupPath = invitation.url.slice(baseUrl.length);
    const token = new URL(invitation.url).searchParams.get('token')!;
    const c = new PortalClient(baseUrl, from());
    const mismatch = await redirected(
      c,
      await c.submit(setupPath, '/portal/setup', { token, password: TEST_PASSWORD, password2: `${TEST_PASSWORD}!` }),
      setupPath,
    );
    assert.equal(mismatch.status, 400);
    assert.match(errorOf(mismatch.text) ?? '', /differ/);
    const set = await redirected(
      c,
      await c.submit(setupPath, '/portal/setup', { token, password: TEST_PASSWORD, password2: TEST_PASSWORD }),
      '/portal/sign-in',
    );
    assert.equal(set.status, 200);
    assert.match(set.text, /Your password is set\./);

    // A refused upload: 303 to the form, which shows the API's message with the API's status.
    const form = await user.get('/portal/jobs/new');
    const csrf = /action="\/portal\/jobs\/new\?_csrf=([^"]+)"/.exec(form.text)![1];
    const upload = await fetch(`${baseUrl}/portal/jobs/new?_csrf=${encodeURIComponent(csrf)}`, {
      method: 'POST',
      body: scanForm(Buffer.from('not a zip')),
      redirect: 'manual',
      headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}`, ...user.headers },
    });
    const refusedUpload = await redirected(
      user,
      { status: upload.status, headers: upload.headers, text: await upload.text() },
      '/portal/jobs/new',
    );
    assert.equal(refusedUpload.status, 400);
    assert.match(errorOf(refusedUpload.text) ?? '', /is not a ZIP archive/);
    assert.equal(errorOf((await user.get('/portal/jobs/new')).text), undefined);
  });

  test("a flash is the session's own: another session of the same user does not get it", async () => {
    const email = 'prg-own@example.org';
    const user = await portalUser(runtime, baseUrl, 'acme', email, TEST_PASSWORD, from());
    const other = new PortalClient(baseUrl, from());
    assert.equal((await other.signIn(email, TEST_PASSWORD)).status, 303);
    const created = await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'mine alone' });
    assert.equal(newKeyOf((await other.get('/portal/settings/keys')).text), undefined);
    assert.match(newKeyOf((await redirected(user, created, '/portal/settings/keys')).text) ?? '', /^hwr_/);
  });
});

describe('a password change renews the session id', () => {
  test('the session that changed the password gets a new id; its old cookie, and every other session, no longer work', async () => {
    const email = 'renew@example.org';
    const user = await portalUser(runtime, baseUrl, 'acme', email, TEST_PASSWORD, from());
    const other = new PortalClient(baseUrl, from());
    await other.signIn(email, TEST_PASSWORD);
    const before = user.cookies.get('hwr_session')!;
    const changed = await user.submit('/portal/settings/account', '/portal/settings/password', {
      current: TEST_PASSWORD,
      password: NEW_PASSWORD,
    });
    assert.equal(changed.status, 303);
    const cookie = changed.headers.getSetCookie().find((value) => value.startsWith('hwr_session='));
    assert.match(cookie ?? '', /^hwr_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    const after = user.cookies.get('hwr_session')!;
    assert.notEqual(after, before, 'a new session id');
    assert.equal((await user.get('/portal/jobs')).status, 200, 'signed in with the new id');
    const stale = new PortalClient(baseUrl, from());
    stale.cookies.set('hwr_session', before);
    assert.equal((await stale.get('/portal/jobs')).status, 303, 'the old id is signed out');
    assert.equal((await other.get('/portal/jobs')).status, 303, 'the other session ended');
    // The new session's forms work (its own CSRF token).
    const created = await user.submit('/portal/settings/keys', '/portal/settings/keys', { label: 'after the change' });
    assert.equal(created.status, 303);
  });
});

describe('a deep link is kept through sign-in', () => {
  test('signed out → the sign-in page (with the page asked for) → signed in → that page', async () => {
    const email = 'deep@example.org';
    const owner = await portalUser(runtime, baseUrl, 'acme', email, TEST_PASSWORD, from());
    assert.ok(owner);
    const submitted = await client.submit(await pagesZip(['1.jpg', '2.jpg']), { key: acme.key });
    const wanted = `/portal/jobs/${submitted.body.job_id}/pages/2`;
    const c = new PortalClient(baseUrl, from());
    const asked = await c.get(wanted);
    assert.equal(asked.status, 303);
    assert.equal(asked.headers.get('location'), `/portal/sign-in?next=${encodeURIComponent(wanted)}`);
    const page = await c.get(asked.headers.get('location')!);
    assert.match(page.text, new RegExp(`name="next" value="${wanted.replace(/\//g, '\\/')}"`));
    // A wrong password first: the way back to the sign-in page keeps the link.
    const wrong = await c.post(`/portal/sign-in`, {
      _csrf: csrfTokenOf(page.text, '/portal/sign-in'),
      email,
      password: 'not the password',
      next: wanted,
    });
    const again = await redirected(c, wrong, `/portal/sign-in?next=${encodeURIComponent(wanted)}`);
    const signedIn = await c.post('/portal/sign-in', {
      _csrf: csrfTokenOf(again.text, '/portal/sign-in'),
      email,
      password: TEST_PASSWORD,
      next: /name="next" value="([^"]*)"/.exec(again.text)![1],
    });
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.headers.get('location'), wanted);
    assert.equal((await c.get(wanted)).status, 200);
    // A query string is kept too.
    const out = new PortalClient(baseUrl, from());
    assert.equal(
      (await out.get('/portal/jobs?page=2')).headers.get('location'),
      `/portal/sign-in?next=${encodeURIComponent('/portal/jobs?page=2')}`,
    );
  });

  test('only a same-site path under /portal is followed: no open redirect', async () => {
    const email = 'open-redirect@example.org';
    await portalUser(runtime, baseUrl, 'acme', email, TEST_PASSWORD, from());
    for (const next of [
      'https://evil.example/portal/jobs',
      '//evil.example/portal/jobs',
      '/\\evil.example/portal',
      '\\\\evil.example',
      '/portal/../v1/usage',
      '/portal/%2e%2e/v1/usage',
      '/v1/usage',
      'javascript:alert(1)',
      '/portal/jobs\r\nSet-Cookie: x=1',
      '',
    ]) {
      const c = new PortalClient(baseUrl, from());
      const page = await c.get(`/portal/sign-in?next=${encodeURIComponent(next)}`);
      assert.equal(page.status, 200, next);
      const signedIn = await c.post('/portal/sign-in', {
        _csrf: csrfTokenOf(page.text, '/portal/sign-in'),
        email,
        password: TEST_PASSWORD,
        next,
      });
      assert.equal(signedIn.status, 303, next);
      assert.equal(signedIn.headers.get('location'), '/portal/jobs', JSON.stringify(next));
    }
    // Already signed in, the sign-in page with a link goes there at once (and refuses another site the same way).
    const c = await portalUser(runtime, baseUrl, 'acme', 'open-redirect-2@example.org', TEST_PASSWORD, from());
    assert.equal((await c.get(`/portal/sign-in?next=${encodeURIComponent('/portal/usage')}`)).headers.get('location'), '/portal/usage');
    assert.equal((await c.get(`/portal/sign-in?next=${encodeURIComponent('//evil.example')}`)).headers.get('location'), '/portal/jobs');
  });
});

describe('uploaded names are isolated', () => {
  test('a page name with U+202E (right-to-left override) is shown in <bdi>, the control made visible, nowhere raw', async () => {
    const name = 'scans/invoice\u202Egpj.exe';
    const submitted = await client.submit(await pagesZip([name, 'scans/later.jpg']), { key: acme.key });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const jobId = submitted.body.job_id;
    const user = await portalUser(runtime, baseUrl, 'acme', 'bidi@example.org', TEST_PASSWORD, from());
    const shownName = '<bdi>scans/invoice[U+202E]gpj.exe</bdi>';
    for (const path of ['/portal/jobs', `/portal/jobs/${jobId}`, `/portal/jobs/${jobId}/pages/1`]) {
      const page = await user.get(path);
      assert.equal(page.status, 200, path);
      assert.ok(!/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(page.text), `${path}: a bidirectional control reached the page raw`);
      assert.ok(page.text.includes(shownName), `${path}: the name isolated and its control visible`);
    }
    const viewer = await user.get(`/portal/jobs/${jobId}/pages/1`);
    assert.match(viewer.text, /<title>Page 1: scans\/invoice\[U\+202E\]gpj\.exe · hwr<\/title>/);
  });
});

describe('the upload form', () => {
  test('says the page order rule: natural name order, 2 before 10, folders included', async () => {
    const user = await portalUser(runtime, baseUrl, 'acme', 'order@example.org', TEST_PASSWORD, from());
    const form = await user.get('/portal/jobs/new');
    assert.match(form.text, /natural order of their names/);
    assert.match(form.text, /<code>2\.jpg<\/code> before <code>10\.jpg<\/code>/);
  });
});
