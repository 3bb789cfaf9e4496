// Clients that are not polite, over raw TCP against the real server: a body that trickles, a
// large body behind a refused key, too many connections from one address; and the headers
// every response carries.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer } from '../support/http-client.ts';
import { PortalClient } from '../support/portal-client.ts';

const server = await startApiServer(await createTestDatabase(), {
  env: { MIN_BODY_BYTES_PER_SECOND: '1024', BODY_RATE_WINDOW_SECONDS: '2', MAX_CONNECTIONS_PER_ADDRESS: '4' },
});
after(() => server.close());
const { key } = await createCredentials(server.runtime, 'hostile');
const port = Number(new URL(server.baseUrl).port);

interface Exchange {
  socket: net.Socket;
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<{ received: string; afterMs: number }>;
}

/** The server must close within `deadlineMs`, or the test fails (instead of waiting for ever). */
function connect(deadlineMs = 20_000): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    const closed = new Promise<{ received: string; afterMs: number }>((done, fail) => {
      const deadline = setTimeout(() => {
        socket.destroy();
        fail(new Error(`the server still held the connection after ${deadlineMs} ms; it sent ${JSON.stringify(received.slice(0, 200))}`));
      }, deadlineMs);
      socket.once('close', () => {
        clearTimeout(deadline);
        done({ received, afterMs: Date.now() - started });
      });
    });
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

function uploadHead(apiKey: string, contentLength: number): string {
  return [
    'POST /v1/process-scan HTTP/1.1',
    'Host: 127.0.0.1',
    `X-API-Key: ${apiKey}`,
    'Content-Type: multipart/form-data; boundary=b0undary',
    `Content-Length: ${contentLength}`,
    '',
    '',
  ].join('\r\n');
}

describe('hostile clients', () => {
  test('a body trickled at 50 B/s is cut with 408 request_body_too_slow and the connection closed', async () => {
    const { socket, closed } = await connect();
    socket.write(uploadHead(key, 10_000_000));
    socket.write('--b0undary\r\nContent-Disposition: form-data; name="scan_zip"; filename="a.zip"\r\n\r\n');
    const trickle = setInterval(() => socket.writable && socket.write('x'.repeat(50)), 1000);
    try {
      const { received, afterMs } = await closed;
      assert.match(received, /^HTTP\/1\.1 408 /);
      assert.match(received, /"code":"request_body_too_slow"/);
      assert.ok(afterMs < 15_000, `cut after ${afterMs} ms`);
    } finally {
      clearInterval(trickle);
    }
  });

  test('a large body behind an unknown key gets its 401 and the connection is closed without reading the rest', async () => {
    const declared = 500 * 1024 * 1024;
    const { socket, closed } = await connect();
    socket.write(uploadHead('hwr_not-a-real-key', declared));
    const chunk = Buffer.alloc(64 * 1024, 7);
    // The client sends the whole declared body (about 50 MB/s) unless the server closes first: a
    // server that read the rest before answering would see all of it sent.
    let sent = 0;
    const pump = setInterval(() => {
      for (let i = 0; i < 16 && socket.writable && sent < declared; i++) {
        socket.write(chunk);
        sent += chunk.length;
      }
    }, 20);
    try {
      const { received } = await closed;
      assert.match(received, /^HTTP\/1\.1 401 /);
      assert.ok(sent < declared, `closed with ${sent} of ${declared} bytes sent: the server did not wait for the rest`);
    } finally {
      clearInterval(pump);
    }
  });

  test('one address may hold MAX_CONNECTIONS_PER_ADDRESS connections; more are closed at once', async () => {
    const held = await Promise.all(Array.from({ length: 4 }, () => connect()));
    try {
      const extra = await connect();
      const { afterMs } = await extra.closed;
      assert.ok(afterMs < 2_000);
      // The held ones still work.
      held[0].socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      assert.match((await held[0].closed).received, /^HTTP\/1\.1 200 /);
    } finally {
      for (const exchange of held) exchange.socket.destroy();
    }
  });

  test('responses say nosniff; X-Forwarded-For is not believed without TRUST_PROXY', async () => {
    const response = await fetch(`${server.baseUrl}/healthz`, { headers: { 'X-Forwarded-Proto': 'https' } });
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(response.headers.get('strict-transport-security'), null, 'no HSTS on plain http');
    // The client address the service uses (the portal's sign-in throttle records it) is the
    // connection's, not the one a client writes in X-Forwarded-For.
    assert.equal(server.runtime.config.http.trustProxy, false);
    const email = 'forwarded-for@example.org';
    const signIn = await new PortalClient(server.baseUrl, { 'X-Forwarded-For': '203.0.113.77' }).signIn(email, 'a password guess');
    // Refused: 303 back to the sign-in page, which says why (Post/Redirect/Get, docs/portal.md).
    assert.equal(signIn.status, 303);
    assert.equal(signIn.headers.get('location'), '/portal/sign-in');
    const attempts = await server.runtime.db.pool.query<{ address: string }>(
      'select address from portal_sign_in_attempts where email = $1',
      [email],
    );
    assert.deepEqual(
      attempts.rows.map((row) => row.address.replace(/^::ffff:/, '')),
      ['127.0.0.1'],
    );
  });
});

describe('disk space', () => {
  test('an upload while DATA_DIR is below MIN_FREE_DISK_BYTES gets 503 insufficient_storage with Retry-After, and nothing is stored', async () => {
    // A floor no disk reaches: every upload is refused before its body is read.
    const full = await startApiServer(await createTestDatabase(), { env: { MIN_FREE_DISK_BYTES: String(Number.MAX_SAFE_INTEGER) } });
    try {
      const credentials = await createCredentials(full.runtime, 'disk');
      const response = await full.client.submit(await pagesZip(['1.jpg']), { key: credentials.key });
      assert.equal(response.status, 503);
      assert.equal(response.body.code, 'insufficient_storage');
      assert.equal(response.headers.get('retry-after'), '300');
      const jobs = await full.runtime.db.pool.query('select count(*)::int as n from job_status');
      assert.equal(jobs.rows[0].n, 0);
    } finally {
      await full.close();
    }
  });
});

describe('kept-alive connections', () => {
  test('many requests with bodies on one kept-alive connection leave no listeners piling up on its socket', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const used = new Set<net.Socket>();
    try {
      for (let n = 0; n < 40; n++) {
        const status = await new Promise<number>((resolve, reject) => {
          const request = http.request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/v1/usage',
              agent,
              headers: { 'Content-Type': 'text/plain', 'Content-Length': 3 },
            },
            (response) => {
              response.resume();
              response.on('end', () => resolve(response.statusCode ?? 0));
            },
          );
          request.on('socket', (socket) => used.add(socket));
          request.on('error', reject);
          request.end('abc');
        });
        assert.ok(status >= 400);
      }
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(used.size, 1, 'one kept-alive connection');
      assert.deepEqual(
        warnings.filter((name) => name === 'MaxListenersExceededWarning'),
        [],
      );
    } finally {
      process.off('warning', onWarning);
      agent.destroy();
    }
  });
});
