import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkWebhookUrl, resolveWebhookTarget, WebhookUrlError, type ResolvedAddress } from '../../src/callbacks/webhook-url.ts';

const strict = { allowHttp: false, allowPrivate: false };

/** A resolver with a fixed table, counting its calls. */
function resolver(table: Record<string, ResolvedAddress[]>) {
  const calls: string[] = [];
  const lookup = async (hostname: string) => {
    calls.push(hostname);
    const answer = table[hostname];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return answer;
  };
  return { lookup, calls };
}

const dns = resolver({
  'hooks.example.com': [
    { address: '93.184.216.34', family: 4 },
    { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
  ],
  'internal.example.com': [{ address: '10.0.0.7', family: 4 }],
  'mixed.example.com': [
    { address: '93.184.216.34', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
  'v6-local.example.com': [
    { address: '93.184.216.34', family: 4 },
    { address: 'fd00::5', family: 6 },
  ],
  'empty.example.com': [],
});

async function assertInvalid(url: string, options: Parameters<typeof checkWebhookUrl>[1], detail: RegExp) {
  await assert.rejects(checkWebhookUrl(url, options), (error: unknown) => {
    assert.ok(error instanceof WebhookUrlError);
    assert.equal(error.code, 'invalid_webhook_url');
    assert.equal(error.status, 400);
    assert.equal(error.title, 'Invalid webhook URL');
    assert.match(error.detail, detail);
    return true;
  });
}

test('an https URL on a public host is accepted, every address resolved', async () => {
  const url = await checkWebhookUrl('https://hooks.example.com/hwr?token=abc', { ...strict, lookup: dns.lookup });
  assert.equal(url.href, 'https://hooks.example.com/hwr?token=abc');
  const target = await resolveWebhookTarget('https://hooks.example.com:8443/x', { ...strict, lookup: dns.lookup });
  assert.equal(target.hostname, 'hooks.example.com');
  assert.equal(target.addresses.length, 2);
});

test('http is refused unless allowHttp; other schemes always', async () => {
  await assertInvalid(
    'http://hooks.example.com/x',
    { ...strict, lookup: dns.lookup },
    /must be an https URL; this service does not call plain http addresses$/,
  );
  assert.ok(await checkWebhookUrl('http://hooks.example.com/x', { ...strict, allowHttp: true, lookup: dns.lookup }));
  for (const url of ['ftp://hooks.example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'gopher://hooks.example.com/']) {
    await assertInvalid(url, { allowHttp: true, allowPrivate: true, lookup: dns.lookup }, /must be an http or https URL/);
  }
});

test('malformed, empty, over-long and credential-carrying URLs are refused', async () => {
  const options = { ...strict, lookup: dns.lookup };
  await assertInvalid('hooks.example.com/x', options, /not a valid absolute URL/);
  await assertInvalid('', options, /empty/);
  await assertInvalid(`https://hooks.example.com/${'a'.repeat(2048)}`, options, /longer than 2048/);
  await assertInvalid('https://user:pass@hooks.example.com/x', options, /user name or password/);
});

test('a host resolving to a non-public address is refused, whichever of its addresses it is', async () => {
  const options = { ...strict, lookup: dns.lookup };
  await assertInvalid('https://internal.example.com/x', options, /host internal\.example\.com resolves to 10\.0\.0\.7, a private address/);
  await assertInvalid('https://mixed.example.com/x', options, /resolves to 127\.0\.0\.1, a loopback address/);
  await assertInvalid('https://v6-local.example.com/x', options, /resolves to fd00::5, a unique-local address/);
});

test('IP literals are checked without a lookup, URL-normalised forms included', async () => {
  const { lookup, calls } = resolver({});
  const options = { ...strict, lookup };
  await assertInvalid('https://127.0.0.1/x', options, /host 127\.0\.0\.1 is a loopback address/);
  await assertInvalid('https://[::1]:8443/x', options, /host ::1 is a loopback address/);
  await assertInvalid('https://[::ffff:10.0.0.1]/x', options, /IPv4-mapped/);
  await assertInvalid('https://169.254.169.254/latest/meta-data', options, /link-local/);
  // WHATWG URL parsing turns these into 127.0.0.1 before we see them.
  await assertInvalid('https://2130706433/x', options, /host 127\.0\.0\.1 is a loopback/);
  await assertInvalid('https://0x7f.1/x', options, /host 127\.0\.0\.1 is a loopback/);
  await assertInvalid('https://0/x', options, /host 0\.0\.0\.0 is an unspecified/);
  assert.ok(await checkWebhookUrl('https://93.184.216.34/x', options));
  assert.deepEqual(calls, []);
});

test('allowPrivate relaxes the address rule (local development and tests)', async () => {
  const options = { allowHttp: true, allowPrivate: true, lookup: dns.lookup };
  assert.ok(await checkWebhookUrl('https://internal.example.com/x', options));
  assert.ok(await checkWebhookUrl('http://127.0.0.1:9999/x', options));
  assert.ok(await checkWebhookUrl('http://[::1]:9999/x', options));
});

test('a host that does not resolve is refused', async () => {
  await assertInvalid(
    'https://nowhere.example.com/x',
    { ...strict, lookup: dns.lookup },
    /host nowhere\.example\.com does not resolve \(ENOTFOUND\)/,
  );
  await assertInvalid('https://empty.example.com/x', { ...strict, lookup: dns.lookup }, /host empty\.example\.com does not resolve/);
});

test('the system resolver is used by default (localhost resolves to loopback)', async () => {
  await assertInvalid('https://localhost/x', strict, /host localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
});
