// sendCallback against real local HTTP(S) receivers: signature verified over the raw bytes,
// non-2xx, redirects, timeouts, refused connections, the address rule, DNS pinning, TLS.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import { CALLBACK_USER_AGENT, sendCallback, type SendCallbackOptions } from '../../src/callbacks/send-callback.ts';
import { verifyCallbackSignature } from '../../src/callbacks/signature.ts';
import type { ResolvedAddress } from '../../src/callbacks/webhook-url.ts';

const SECRET = 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90';
const BODY = Buffer.from(
  JSON.stringify({
    job_id: '5f0c1f8e-8a43-4a53-b0f4-2d1c9b7e6a10',
    state: 'done',
    page_count: 2,
    event: 'job.completed',
    note: 'Zoé — été',
  }),
  'utf8',
);
const certificates = path.resolve(import.meta.dirname, '../fixtures/callbacks');
const CERT = readFileSync(path.join(certificates, 'localhost-cert.pem'));
const KEY = readFileSync(path.join(certificates, 'localhost-key.pem'));

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

type Handler = (request: IncomingMessage, response: ServerResponse, index: number) => void;

const servers: Array<http.Server | https.Server> = [];
after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A receiver that keeps the raw bytes of every request it gets. */
async function receiver(handler: Handler, options: { host?: string; port?: number; tls?: boolean } = {}) {
  const requests: Received[] = [];
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks) });
      handler(request, response, requests.length);
    });
  };
  const server = options.tls ? https.createServer({ cert: CERT, key: KEY }, listener) : http.createServer(listener);
  servers.push(server);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return { requests, port, url: `${options.tls ? 'https' : 'http'}://${host}:${port}/hooks/hwr?source=test` };
}

function deliver(url: string, extra: Partial<SendCallbackOptions> = {}) {
  return sendCallback({
    url,
    body: BODY,
    secret: SECRET,
    event: 'job.completed',
    deliveryId: 'dlv_5f0c1f8e-job.completed',
    timeoutMs: 5000,
    allowHttp: true,
    allowPrivate: true,
    ...extra,
  });
}

test('a delivery POSTs the exact body with the documented headers, and the receiver verifies the signature', async () => {
  const hook = await receiver((_request, response) => response.writeHead(204).end());
  const outcome = await deliver(hook.url);
  assert.equal(outcome.ok, true);
  assert.equal(outcome.status, 204);
  assert.equal(outcome.error, null);
  assert.ok(outcome.durationMs >= 0);

  assert.equal(hook.requests.length, 1);
  const [request] = hook.requests;
  assert.equal(request.method, 'POST');
  assert.equal(request.url, '/hooks/hwr?source=test');
  assert.deepEqual(request.body, BODY);
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['content-length'], String(BODY.length));
  assert.equal(request.headers['x-svc-event'], 'job.completed');
  assert.equal(request.headers['x-svc-delivery'], 'dlv_5f0c1f8e-job.completed');
  assert.equal(request.headers['user-agent'], CALLBACK_USER_AGENT);
  assert.match(String(request.headers['x-svc-signature']), /^[0-9a-f]{64}$/);
  assert.equal(verifyCallbackSignature(SECRET, request.body, request.headers['x-svc-signature'] as string), true);
  assert.equal(verifyCallbackSignature(SECRET.replace('a1', 'b1'), request.body, request.headers['x-svc-signature'] as string), false);
});

test('the failure event is sent as given', async () => {
  const hook = await receiver((_request, response) => response.writeHead(200).end('ok'));
  const outcome = await deliver(hook.url, { event: 'job.failed' });
  assert.equal(outcome.ok, true);
  assert.equal(hook.requests[0].headers['x-svc-event'], 'job.failed');
});

test('a non-2xx answer is a failed attempt with its status, and nothing is retried here', async () => {
  const hook = await receiver((_request, response) => response.writeHead(500).end('boom'));
  const outcome = await deliver(hook.url);
  assert.deepEqual({ ok: outcome.ok, status: outcome.status, error: outcome.error }, { ok: false, status: 500, error: 'HTTP 500' });
  const notFound = await receiver((_request, response) => response.writeHead(404).end());
  assert.equal((await deliver(notFound.url)).error, 'HTTP 404');
  assert.equal(hook.requests.length, 1);
});

test('a redirect is not followed', async () => {
  const hook = await receiver((request, response) => {
    if (request.url?.startsWith('/hooks/')) response.writeHead(302, { Location: '/elsewhere' }).end();
    else response.writeHead(200).end();
  });
  const outcome = await deliver(hook.url);
  assert.deepEqual({ ok: outcome.ok, status: outcome.status }, { ok: false, status: 302 });
  assert.match(outcome.error ?? '', /HTTP 302 \(redirects are not followed\)/);
  assert.deepEqual(
    hook.requests.map((request) => request.url),
    ['/hooks/hwr?source=test'],
  );
});

test('a receiver that never answers times out', async () => {
  const hook = await receiver(() => {
    /* never answers */
  });
  const outcome = await deliver(hook.url, { timeoutMs: 1000 });
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, null);
  assert.equal(outcome.error, 'timeout after 1000 ms');
  assert.ok(outcome.durationMs >= 950, `durationMs ${outcome.durationMs}`);
  assert.equal(hook.requests.length, 1);
});

test('once a 2xx status arrives, a body that never ends does not matter', async () => {
  const hook = await receiver((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/plain' });
    response.write('accepted, still talking...');
  });
  const outcome = await deliver(hook.url, { timeoutMs: 1000 });
  assert.deepEqual({ ok: outcome.ok, status: outcome.status, error: outcome.error }, { ok: true, status: 200, error: null });
});

test('a refused connection is reported, not thrown', async () => {
  const hook = await receiver((_request, response) => response.end());
  const closed = servers[servers.length - 1];
  await new Promise((resolve) => closed.close(resolve));
  const outcome = await deliver(hook.url);
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, null);
  assert.match(outcome.error ?? '', /ECONNREFUSED/);
});

test('a private address is refused at delivery time unless allowPrivate, without connecting', async () => {
  const hook = await receiver((_request, response) => response.writeHead(200).end());
  const outcome = await deliver(hook.url, { allowPrivate: false });
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, null);
  assert.match(outcome.error ?? '', /^invalid_webhook_url: webhook_url host 127\.0\.0\.1 is a loopback address/);
  assert.equal(hook.requests.length, 0);

  const viaName = await deliver(`http://localhost:${hook.port}/x`, { allowPrivate: false });
  assert.match(viaName.error ?? '', /^invalid_webhook_url: webhook_url host localhost resolves to/);
  assert.equal(hook.requests.length, 0);

  assert.equal((await deliver(hook.url, { allowPrivate: true })).ok, true);
  assert.equal(hook.requests.length, 1);
});

test('http is refused at delivery time unless allowHttp', async () => {
  const hook = await receiver((_request, response) => response.writeHead(200).end());
  const outcome = await deliver(hook.url, { allowHttp: false });
  assert.match(outcome.error ?? '', /^invalid_webhook_url: webhook_url must be an https URL/);
  assert.equal(hook.requests.length, 0);
});

test('the connection goes to the address that was checked (no second resolution: DNS rebinding)', async () => {
  // Two receivers on the same port, 127.0.0.1 and 127.0.0.2. The resolver answers
  // 127.0.0.1 first and 127.0.0.2 afterwards, like a rebinding attacker's DNS.
  const checked = await receiver((_request, response) => response.writeHead(200).end());
  const rebound = await receiver((_request, response) => response.writeHead(200).end(), { host: '127.0.0.2', port: checked.port });
  const calls: string[] = [];
  const lookup = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    return [{ address: calls.length === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
  };
  const outcome = await deliver(`http://hooks.rebind.test:${checked.port}/x`, { lookup });
  assert.equal(outcome.ok, true, outcome.error ?? '');
  assert.deepEqual(calls, ['hooks.rebind.test']);
  assert.equal(checked.requests.length, 1);
  assert.equal(rebound.requests.length, 0);
  // The request still names the host it was addressed to.
  assert.equal(checked.requests[0].headers.host, `hooks.rebind.test:${checked.port}`);
});

test('https: the certificate is verified against the URL host, not the pinned address', async () => {
  const hook = await receiver((_request, response) => response.writeHead(200).end(), { host: '127.0.0.1', tls: true });
  const secure = `https://localhost:${hook.port}/x`;
  const lookup = async (): Promise<ResolvedAddress[]> => [{ address: '127.0.0.1', family: 4 }];

  const trusted = await deliver(secure, { ca: CERT, allowHttp: false, lookup });
  assert.deepEqual({ ok: trusted.ok, status: trusted.status, error: trusted.error }, { ok: true, status: 200, error: null });
  assert.equal(verifyCallbackSignature(SECRET, hook.requests[0].body, hook.requests[0].headers['x-svc-signature'] as string), true);

  const untrusted = await deliver(secure, { allowHttp: false, lookup });
  assert.equal(untrusted.ok, false);
  assert.match(untrusted.error ?? '', /self[- ]signed|certificate/i);

  // Same address, another name: the certificate (localhost, 127.0.0.1) does not cover it.
  const wrongName = await deliver(`https://hooks.other.test:${hook.port}/x`, { ca: CERT, allowHttp: false, lookup });
  assert.equal(wrongName.ok, false);
  assert.match(wrongName.error ?? '', /ERR_TLS_CERT_ALTNAME_INVALID|does not match/);
  assert.equal(hook.requests.length, 1);
});

test('an attempt aborted by the caller says so', async () => {
  const hook = await receiver(() => {
    /* never answers */
  });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const outcome = await deliver(hook.url, { signal: controller.signal, timeoutMs: 5000 });
  assert.deepEqual({ ok: outcome.ok, status: outcome.status, error: outcome.error }, { ok: false, status: null, error: 'aborted' });
});

test('nonsense input is reported, never thrown', async () => {
  const outcome = await deliver('not a url');
  assert.equal(outcome.ok, false);
  assert.match(outcome.error ?? '', /^invalid_webhook_url: webhook_url is not a valid absolute URL/);
  const badHeader = await deliver('http://127.0.0.1:9/x', { deliveryId: 'line\nbreak' });
  assert.equal(badHeader.ok, false);
  assert.match(badHeader.error ?? '', /Invalid character|ERR_INVALID_CHAR/);
});
