// The portal's users and sign-in over real HTTP (docs/portal.md): setup links (single use,
// expiring), sign in and out, sessions (revocable, idle and absolute expiry), cookies, CSRF on
// every form, throttling per email and per address, security headers, and the security events.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, describe, test } from 'node:test';
import { accountStreamId } from '../../domain/events.ts';
import { createAccount } from '../../src/use-cases/accounts.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { inviteUser, MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_EMAIL } from '../../src/use-cases/users.ts';
import { createTestDatabase } from '../support/database.ts';
import { startApiServer } from '../support/http-client.ts';
import { csrfTokenOf, PortalClient, type PortalResponse, portalUser, TEST_PASSWORD } from '../support/portal-client.ts';

const databaseUrl = await createTestDatabase();
// TRUST_PROXY: each test speaks from its own X-Forwarded-For address, so per-address throttling
// of one test does not reach the others.
const server = await startApiServer(databaseUrl, { env: { TRUST_PROXY: '1' } });
after(() => server.close());
const { runtime, baseUrl } = server;
await createAccount(runtime.bus, 'acme', 'test');
let addresses = 0;
const from = () => ({ 'X-Forwarded-For': `203.0.113.${++addresses}` });
const client = () => new PortalClient(baseUrl, from());
const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;
/** The page a form's POST leads to (Post/Redirect/Get: every form answers 303), as a browser shows it. */
const shown = async (c: PortalClient, response: PortalResponse): Promise<PortalResponse> => {
  assert.equal(response.status, 303, response.text);
  return c.get(response.headers.get('location')!);
};
/** A sign-in as a browser sees it: a success is the POST's 303 onwards; a refusal, the sign-in page it leads back to. */
const signedInPage = async (c: PortalClient, email: string, password: string): Promise<PortalResponse> => {
  const response = await c.signIn(email, password);
  return response.headers.get('location')?.startsWith('/portal/sign-in') ? shown(c, response) : response;
};
const accountEvents = async (name = 'acme') => {
  const { rows } = await runtime.db.pool.query<{ account_id: string }>('select account_id from accounts where name = $1', [name]);
  return readStream(runtime.db.pool, accountStreamId(rows[0].account_id));
};

describe('portal pages and headers', () => {
  test('/ redirects to /portal, which sends a signed-out visitor to the sign-in page', async () => {
    const c = client();
    const root = await c.get('/');
    assert.equal(root.status, 303);
    assert.equal(root.headers.get('location'), '/portal');
    const portal = await c.get('/portal');
    assert.equal(portal.status, 303);
    assert.equal(portal.headers.get('location'), '/portal/sign-in');
    for (const path of ['/portal/jobs', '/portal/settings/keys', '/portal/settings/account']) {
      const page = await c.get(path);
      assert.equal(page.status, 303, path);
      assert.equal(page.headers.get('location'), `/portal/sign-in?next=${encodeURIComponent(path)}`);
    }
  });

  test('every portal response carries a strict CSP without inline script, frame-ancestors none, Referrer-Policy; pages hold no inline script', async () => {
    const c = client();
    for (const path of ['/portal/sign-in', '/portal/nowhere', '/portal/static/portal.js']) {
      const page = await c.get(path);
      const csp = page.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/, path);
      assert.match(csp, /script-src 'self'(;|$)/, path);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.equal(page.headers.get('referrer-policy'), 'same-origin', path);
      assert.equal(page.headers.get('x-frame-options'), 'DENY', path);
    }
    const page = await c.get('/portal/sign-in');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    for (const script of page.text.match(/<script[^>]*>/g) ?? []) assert.match(script, / src="\/portal\/static\//);
    assert.doesNotMatch(page.text, /<script(?![^>]*src=)[^>]*>/);
    assert.doesNotMatch(page.text, / on[a-z]+="/);
    assert.equal((await c.get('/portal/nowhere')).status, 404);
    // The API is untouched by the portal.
    assert.equal((await fetch(`${baseUrl}/v1/process-scan/x`)).status, 401);
  });
});

describe('setup links', () => {
  test('invite → set password (mismatch and short refused) → sign in; the link works once', async () => {
    const invitation = await inviteUser(runtime.bus, 'acme', 'Ada@Example.org', baseUrl, 'test');
    assert.equal(invitation.email, 'ada@example.org');
    assert.match(invitation.url, new RegExp(`^${baseUrl}/portal/setup\\?token=[\\w-]{43}$`));
    const c = client();
    const setupPath = invitation.url.slice(baseUrl.length);
    const form = await c.get(setupPath);
    assert.equal(form.status, 200);
    assert.match(form.text, /ada@example\.org/);
    const token = tokenOf(invitation.url);
    const csrf = csrfTokenOf(form.text, '/portal/setup');
    const mismatch = await shown(
      c,
      await c.post('/portal/setup', { _csrf: csrf, token, password: TEST_PASSWORD, password2: `${TEST_PASSWORD}!` }),
    );
    assert.equal(mismatch.status, 400);
    assert.match(mismatch.text, /differ/);
    const short = await shown(c, await c.post('/portal/setup', { _csrf: csrf, token, password: 'short', password2: 'short' }));
    assert.equal(short.status, 400);
    assert.match(short.text, /at least 12 characters/);
    const done = await shown(c, await c.post('/portal/setup', { _csrf: csrf, token, password: TEST_PASSWORD, password2: TEST_PASSWORD }));
    assert.equal(done.status, 200);
    assert.match(done.text, /Your password is set/);
    // Used: refused on GET and on POST, the password unchanged.
    assert.equal((await c.get(setupPath)).status, 410);
    const again = await shown(
      c,
      await c.post('/portal/setup', {
        _csrf: csrf,
        token,
        password: 'another password 123',
        password2: 'another password 123',
      }),
    );
    assert.equal(again.status, 410);
    assert.match(again.text, /already been used/);
    const signedIn = await c.signIn('ADA@example.org', TEST_PASSWORD);
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.headers.get('location'), '/portal/jobs');
    const types = (await accountEvents()).map((event) => event.type);
    for (const type of ['UserInvited', 'UserCreated', 'UserSignedIn']) assert.ok(types.includes(type as never), type);
    const stored = await runtime.db.pool.query<{ password_hash: string }>('select password_hash from portal_passwords where user_id = $1', [
      invitation.userId,
    ]);
    assert.match(stored.rows[0].password_hash, /^scrypt\$N=32768,r=8,p=1\$[\w-]{22}\$[\w-]{43}$/);
    // Nothing in the log holds the password, its hash or the setup token.
    const log = JSON.stringify(await accountEvents());
    for (const secret of [TEST_PASSWORD, stored.rows[0].password_hash, tokenOf(invitation.url)]) assert.ok(!log.includes(secret));
  });

  test('an expired link, a link replaced by a newer one and an unknown link are refused', async () => {
    const accountId = (await runtime.db.pool.query<{ account_id: string }>("select account_id from accounts where name = 'acme'")).rows[0]
      .account_id;
    const invitation = await inviteUser(runtime.bus, 'acme', 'late@example.org', baseUrl, 'test');
    await runtime.db.pool.query("update portal_invites set expires_at = now() - interval '1 second' where user_id = $1", [
      invitation.userId,
    ]);
    // The decider refuses from the event's expiry as well: a second invite made already expired.
    const c = client();
    assert.equal((await c.get(invitation.url.slice(baseUrl.length))).status, 410);
    const page = await c.get('/portal/sign-in');
    const csrf = csrfTokenOf(page.text, '/portal/sign-in');
    const expired = await shown(
      c,
      await c.post('/portal/setup', {
        _csrf: csrf,
        token: tokenOf(invitation.url),
        password: TEST_PASSWORD,
        password2: TEST_PASSWORD,
      }),
    );
    assert.equal(expired.status, 410);
    assert.match(expired.text, /expired/);
    // A second link for the same user ends the first one.
    const first = await inviteUser(runtime.bus, 'acme', 'twice@example.org', baseUrl, 'test');
    const second = await inviteUser(runtime.bus, 'acme', 'twice@example.org', baseUrl, 'test');
    assert.equal(second.userId, first.userId);
    assert.equal((await c.get(first.url.slice(baseUrl.length))).status, 410);
    assert.equal((await c.get(second.url.slice(baseUrl.length))).status, 200);
    const unknown = await c.get('/portal/setup?token=nope');
    assert.equal(unknown.status, 410);
    assert.match(unknown.text, /not valid/);
    assert.ok(accountId);
  });

  test('an email is a user of one account only', async () => {
    await createAccount(runtime.bus, 'other-co', 'test');
    await inviteUser(runtime.bus, 'acme', 'one@example.org', baseUrl, 'test');
    await assert.rejects(inviteUser(runtime.bus, 'other-co', 'one@example.org', baseUrl, 'test'), /another account/);
    await assert.rejects(inviteUser(runtime.bus, 'acme', 'not-an-email', baseUrl, 'test'), /not an email/);
  });
});

describe('sign-in and sessions', () => {
  test('the session cookie is HttpOnly, SameSite=Lax, random, and not Secure over plain http', async () => {
    const c = await portalUser(runtime, baseUrl, 'acme', 'cookie@example.org', TEST_PASSWORD, from());
    const again = new PortalClient(baseUrl, from());
    const response = await again.signIn('cookie@example.org', TEST_PASSWORD);
    const cookie = response.headers.getSetCookie().find((value) => value.startsWith('hwr_session='))!;
    assert.match(cookie, /^hwr_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    assert.notEqual(again.cookies.get('hwr_session'), c.cookies.get('hwr_session'));
    const jobs = await c.get('/portal/jobs');
    assert.equal(jobs.status, 200);
    assert.match(jobs.text, /cookie@example\.org/);
  });

  test('a wrong password and an unknown email get the same answer; a known user gets a UserSignInFailed event', async () => {
    await portalUser(runtime, baseUrl, 'acme', 'wrong@example.org', TEST_PASSWORD, from());
    const wrong = await signedInPage(client(), 'wrong@example.org', 'not the password at all');
    const unknown = await signedInPage(client(), 'nobody@example.org', 'not the password at all');
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    const message = (text: string) => /<p class="notice error"[^>]*>([^<]*)</.exec(text)?.[1];
    assert.equal(message(wrong.text), message(unknown.text));
    assert.ok(!wrong.headers.getSetCookie().some((value) => value.startsWith('hwr_session=')));
    const failed = (await accountEvents()).filter((event) => event.type === 'UserSignInFailed');
    assert.equal(failed.length, 1);
    assert.deepEqual(Object.keys(failed[0].data).sort(), ['address', 'failedAt', 'reason', 'userId']);
  });

  test(`${MAX_FAILURES_PER_EMAIL} failures throttle the email (even the right password then gets 429), from any address`, async () => {
    await portalUser(runtime, baseUrl, 'acme', 'throttle@example.org', TEST_PASSWORD, from());
    for (let i = 0; i < MAX_FAILURES_PER_EMAIL; i++)
      assert.equal((await signedInPage(client(), 'throttle@example.org', `wrong password ${i}`)).status, 401);
    const throttled = await signedInPage(client(), 'throttle@example.org', TEST_PASSWORD);
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '900');
    assert.match(throttled.text, /Too many failed sign-ins/);
    // Ten wrong passwords in all: every one refused, no session.
    for (let i = 0; i < 10 - MAX_FAILURES_PER_EMAIL; i++)
      assert.equal((await signedInPage(client(), 'throttle@example.org', `wrong ${i}`)).status, 429);
    // A throttled attempt checks no password and is no failure: trying on does not lengthen the wait.
    const { rows } = await runtime.db.pool.query(
      "select count(*)::int as n from portal_sign_in_attempts where email = 'throttle@example.org' and not ok",
    );
    assert.equal(rows[0].n, MAX_FAILURES_PER_EMAIL);
    // After the window (failures aged here), the right password works again.
    await runtime.db.pool.query(
      "update portal_sign_in_attempts set attempted_at = attempted_at - interval '16 minutes' where email = 'throttle@example.org'",
    );
    assert.equal((await client().signIn('throttle@example.org', TEST_PASSWORD)).status, 303);
  });

  test('sign-ins sent side by side get no more password checks than the limit (each counts the others)', async () => {
    await portalUser(runtime, baseUrl, 'acme', 'burst@example.org', TEST_PASSWORD, from());
    const burst = await Promise.all(
      Array.from({ length: 19 }, (_, i) => signedInPage(client(), 'burst@example.org', i === 18 ? TEST_PASSWORD : `wrong guess ${i}`)),
    );
    const statuses = burst.map((response) => response.status);
    const checked = statuses.filter((status) => status !== 429).length;
    assert.ok(checked <= MAX_FAILURES_PER_EMAIL, `${checked} of 19 parallel sign-ins had their password checked: ${statuses.join(' ')}`);
    assert.ok(
      statuses.every((status) => status === 401 || status === 429 || status === 303),
      statuses.join(' '),
    );
  });

  test('the current password of a password change is throttled as a sign-in is (a stolen session cannot guess it)', async () => {
    const c = await portalUser(runtime, baseUrl, 'acme', 'guessed@example.org', TEST_PASSWORD, from());
    for (let i = 0; i < MAX_FAILURES_PER_EMAIL; i++) {
      const wrong = await shown(
        c,
        await c.submit('/portal/settings/account', '/portal/settings/password', {
          current: `guess ${i}`,
          password: 'a brand new password',
        }),
      );
      assert.equal(wrong.status, 400);
      assert.match(wrong.text, /current password is not right/);
    }
    const throttled = await shown(
      c,
      await c.submit('/portal/settings/account', '/portal/settings/password', {
        current: TEST_PASSWORD,
        password: 'a brand new password',
      }),
    );
    // A throttled password change answers as a throttled sign-in does (the catalog's `throttled`: 429, Retry-After).
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '900');
    assert.match(throttled.text, /Too many failed attempts/);
    // Each wrong current password is a failure of this user (and the throttled attempt checks none).
    const { rows } = await runtime.db.pool.query<{ user_id: string }>('select user_id from portal_users where email = $1', [
      'guessed@example.org',
    ]);
    const failures = (await accountEvents()).filter(
      (event) => event.type === 'UserSignInFailed' && (event.data as { userId: string }).userId === rows[0].user_id,
    );
    assert.equal(failures.length, MAX_FAILURES_PER_EMAIL);
  });

  test('behind the proxy, the address is the entry the proxy added (the last), not one the client wrote before it', async () => {
    const proxy = `198.51.100.${++addresses}`;
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      const spoofed = new PortalClient(baseUrl, { 'X-Forwarded-For': `192.0.2.${i}, ${proxy}` });
      assert.equal((await signedInPage(spoofed, `spray${i}@example.org`, 'password guess 1')).status, 401);
    }
    const next = new PortalClient(baseUrl, { 'X-Forwarded-For': `192.0.2.250, ${proxy}` });
    assert.equal(
      (await signedInPage(next, 'spray-last@example.org', 'password guess 1')).status,
      429,
      'a rotating first entry does not escape the throttle',
    );
  });

  test(`${MAX_FAILURES_PER_ADDRESS} failures from one address throttle that address, whatever the email`, async () => {
    await portalUser(runtime, baseUrl, 'acme', 'address@example.org', TEST_PASSWORD, from());
    const attacker = client();
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++)
      assert.equal((await signedInPage(attacker, `guess${i}@example.org`, 'password guess 1')).status, 401);
    assert.equal((await signedInPage(attacker, 'address@example.org', TEST_PASSWORD)).status, 429);
    assert.equal((await client().signIn('address@example.org', TEST_PASSWORD)).status, 303);
  });

  test('forms without the CSRF token, or with a forged one, are refused', async () => {
    const c = await portalUser(runtime, baseUrl, 'acme', 'csrf@example.org', TEST_PASSWORD, from());
    for (const _csrf of [undefined, 'forged', 'x'.repeat(43)]) {
      const form: Record<string, string> = _csrf === undefined ? { label: 'evil' } : { _csrf, label: 'evil' };
      const refused = await c.post('/portal/settings/keys', form);
      assert.equal(refused.status, 403);
      assert.equal((await c.post('/portal/sign-out', form)).status, 403);
    }
    // A sign-in form posted without the CSRF cookie of the page (another site's form).
    const page = await client().get('/portal/sign-in');
    const stranger = client();
    const crossSite = await stranger.post('/portal/sign-in', {
      _csrf: csrfTokenOf(page.text, '/portal/sign-in'),
      email: 'csrf@example.org',
      password: TEST_PASSWORD,
    });
    assert.equal(crossSite.status, 403);
    assert.equal(stranger.cookies.has('hwr_session'), false);
    // A form posted from another origin, even with the right tokens.
    const page2 = await c.get('/portal/settings/keys');
    // (node:http: fetch does not let a caller set Origin.)
    const foreignStatus = await new Promise<number>((resolve, reject) => {
      const body = new URLSearchParams({ _csrf: csrfTokenOf(page2.text, '/portal/settings/keys'), label: 'evil' }).toString();
      const request = http.request(`${baseUrl}/portal/settings/keys`, {
        method: 'POST',
        headers: {
          Cookie: `hwr_session=${c.cookies.get('hwr_session')}`,
          Origin: 'https://evil.example',
          'Content-Type': 'application/x-www-form-urlencoded',
          ...from(),
        },
      });
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
      request.end(body);
    });
    assert.equal(foreignStatus, 403);
    // A form that is not urlencoded.
    const json = await fetch(`${baseUrl}/portal/sign-in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
      redirect: 'manual',
    });
    assert.equal(json.status, 415);
    // Still signed in: nothing happened.
    assert.equal((await c.get('/portal/jobs')).status, 200);
  });

  test('sign out ends the session on the server: the old cookie no longer works', async () => {
    const c = await portalUser(runtime, baseUrl, 'acme', 'out@example.org', TEST_PASSWORD, from());
    const cookie = c.cookies.get('hwr_session')!;
    const out = await c.submit('/portal/jobs', '/portal/sign-out', {});
    assert.equal(out.status, 303);
    assert.equal(c.cookies.has('hwr_session'), false);
    const replay = new PortalClient(baseUrl, from());
    replay.cookies.set('hwr_session', cookie);
    assert.equal((await replay.get('/portal/jobs')).status, 303);
  });

  test('sessions expire when idle and at their absolute expiry; sign out everywhere ends them all', async () => {
    const c = await portalUser(runtime, baseUrl, 'acme', 'expiry@example.org', TEST_PASSWORD, from());
    const second = new PortalClient(baseUrl, from());
    await second.signIn('expiry@example.org', TEST_PASSWORD);
    const third = new PortalClient(baseUrl, from());
    await third.signIn('expiry@example.org', TEST_PASSWORD);
    const hash = async (client: PortalClient) =>
      (await import('../../src/use-cases/accounts.ts')).sha256Hex(client.cookies.get('hwr_session')!);
    await runtime.db.pool.query("update portal_sessions set last_seen_at = now() - interval '2 hours 1 minute' where session_sha256 = $1", [
      await hash(c),
    ]);
    assert.equal((await c.get('/portal/jobs')).status, 303);
    await runtime.db.pool.query("update portal_sessions set expires_at = now() - interval '1 second' where session_sha256 = $1", [
      await hash(second),
    ]);
    assert.equal((await second.get('/portal/jobs')).status, 303);
    assert.equal((await third.get('/portal/jobs')).status, 200);
    const fourth = new PortalClient(baseUrl, from());
    await fourth.signIn('expiry@example.org', TEST_PASSWORD);
    assert.equal((await fourth.submit('/portal/settings/account', '/portal/sign-out-everywhere', {})).status, 303);
    assert.equal((await third.get('/portal/jobs')).status, 303);
    assert.equal((await fourth.get('/portal/jobs')).status, 303);
  });

  test('changing the password records PasswordChanged and ends the other sessions', async () => {
    const c = await portalUser(runtime, baseUrl, 'acme', 'change@example.org', TEST_PASSWORD, from());
    const other = new PortalClient(baseUrl, from());
    await other.signIn('change@example.org', TEST_PASSWORD);
    const wrong = await shown(
      c,
      await c.submit('/portal/settings/account', '/portal/settings/password', {
        current: 'not it at all',
        password: 'a brand new password',
      }),
    );
    assert.equal(wrong.status, 400);
    const changed = await shown(
      c,
      await c.submit('/portal/settings/account', '/portal/settings/password', {
        current: TEST_PASSWORD,
        password: 'a brand new password',
      }),
    );
    assert.equal(changed.status, 200);
    assert.match(changed.text, /password is changed/);
    assert.equal((await c.get('/portal/jobs')).status, 200);
    assert.equal((await other.get('/portal/jobs')).status, 303);
    assert.equal((await signedInPage(client(), 'change@example.org', TEST_PASSWORD)).status, 401);
    assert.equal((await client().signIn('change@example.org', 'a brand new password')).status, 303);
    assert.ok(
      (await accountEvents()).some(
        (event) => event.type === 'PasswordChanged' && (event.data as { inviteId: string | null }).inviteId === null,
      ),
    );
  });
});

describe('under an https BASE_URL', () => {
  test('the cookies are __Host- prefixed and Secure', async () => {
    const secure = await startApiServer(databaseUrl, { env: { BASE_URL: 'https://portal.example.org' } });
    after(() => secure.close());
    const name = `secure-${randomUUID().slice(0, 6)}`;
    await createAccount(secure.runtime.bus, name, 'test');
    const invitation = await inviteUser(secure.runtime.bus, name, `${name}@example.org`, secure.baseUrl, 'test');
    const c = new PortalClient(secure.baseUrl);
    const page = await c.get(invitation.url.slice(secure.baseUrl.length));
    assert.match(page.headers.getSetCookie()[0], /^__Host-hwr_csrf=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
    await c.post('/portal/setup', {
      _csrf: csrfTokenOf(page.text, '/portal/setup'),
      token: tokenOf(invitation.url),
      password: TEST_PASSWORD,
      password2: TEST_PASSWORD,
    });
    const signedIn = await c.signIn(`${name}@example.org`, TEST_PASSWORD);
    assert.equal(signedIn.status, 303);
    assert.match(
      signedIn.headers.getSetCookie().find((v) => v.startsWith('__Host-hwr_session'))!,
      /HttpOnly; SameSite=Lax; Secure; Max-Age=43200$/,
    );
    assert.match(signedIn.headers.get('strict-transport-security') ?? '', /max-age=/);
  });
});
