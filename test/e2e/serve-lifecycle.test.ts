// `hwr serve` starting and stopping. A start that fails exits non-zero at once: on a port
// already taken it stops its workers and the embedded PostgreSQL it started, and exits 1 (it
// used to keep running). A stop ends within its grace, a trickling upload included, and within a
// few seconds more when the network has cut the database off.
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createApiKey, createAccount } from '../../src/use-cases/accounts.ts';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { tempUploadRoot } from '../../src/intake/temp-uploads.ts';
import { installedTcmalloc } from '../../bench/lib/runtime-env.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';
import { startSilentProxy } from '../support/silent-proxy.ts';
import { waitUntil } from '../support/wait.ts';

const root = path.resolve(import.meta.dirname, '../..');
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-start-failure-'));
const taken = net.createServer();
await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
const takenPort = (taken.address() as net.AddressInfo).port;
after(async () => {
  taken.close();
  await rm(dataDir, { recursive: true, force: true });
});

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Served {
  child: ChildProcessWithoutNullStreams;
  /** stdout and stderr so far. */
  output(): string;
  /** The exit code (null when killed); the process is SIGKILLed after `killAfterMs`. */
  exit: Promise<number | null>;
}

/** `hwr serve ARGS` in a child process with only PATH, HOME, LOG_LEVEL=info and `env` set. */
function serve(args: string[], env: Record<string, string>, killAfterMs: number): Served {
  return spawnServed(process.execPath, [path.join(root, 'src/cli/main.ts'), 'serve', ...args], env, killAfterMs);
}

/** `detached`: in a process group of its own, so that `-pid` reaches whatever it started. */
function spawnServed(command: string, args: string[], env: Record<string, string>, killAfterMs: number, detached = false): Served {
  const child = spawn(command, args, {
    cwd: root,
    detached,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(killer);
      resolve(code);
    }),
  );
  return { child, output: () => output, exit };
}

/** Waits until the served output holds `line`; fails if the process exits first. */
async function waitForLog(served: Served, line: string): Promise<void> {
  while (!served.output().includes(line)) {
    assert.equal(served.child.exitCode, null, served.output());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('hwr serve start and stop', () => {
  test('a port already taken: workers and the embedded PostgreSQL are stopped and the process exits 1', async () => {
    const postgresPort = await freePort();
    const served = serve(
      [],
      {
        DATA_DIR: dataDir,
        EMBEDDED_POSTGRES_PORT: String(postgresPort),
        PORT: String(takenPort),
        HOST: '127.0.0.1',
        WORKER_CONCURRENCY: '1',
      },
      120_000,
    );
    let listening = false;
    const postgresUp = (async () => {
      // The embedded PostgreSQL did start (so this checks that it is stopped, not that it never ran).
      while (served.child.exitCode === null) {
        if (await canConnect(postgresPort)) return (listening = true);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return listening;
    })();
    const code = await served.exit;
    const output = served.output();
    assert.equal(code, 1, output);
    assert.match(output, /EADDRINUSE/);
    assert.ok(await postgresUp, 'the embedded PostgreSQL had started');
    assert.ok(output.includes('"start failed: stopping"'), output);
    assert.equal(await canConnect(postgresPort), false, 'the embedded PostgreSQL is stopped');
    assert.equal(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), false, 'no postmaster left');
  });

  test('the embedded PostgreSQL killed under the service (kill -9): started again, the service ready again; SIGTERM stops both', async () => {
    const port = await freePort();
    const served = serve(
      [],
      {
        DATA_DIR: dataDir,
        EMBEDDED_POSTGRES_PORT: String(await freePort()),
        PORT: String(port),
        HOST: '127.0.0.1',
        WORKER_CONCURRENCY: '1',
        SHUTDOWN_GRACE_SECONDS: '1',
      },
      120_000,
    );
    await waitForLog(served, '"hwr listening"');
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    const postmaster = async () => Number((await readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0]);
    const killed = await postmaster();
    process.kill(killed, 'SIGKILL');
    const killedAt = Date.now();
    let restarted = 0;
    while (Date.now() - killedAt < 60_000) {
      const readiness = await fetch(`http://127.0.0.1:${port}/readyz`)
        .then((response) => response.json() as Promise<{ status?: string }>)
        .catch(() => null);
      const now = await postmaster();
      if (readiness?.status === 'ready' && now > 0 && now !== killed) {
        restarted = now;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(restarted > 0, `ready again on a new postmaster within 60 s: ${served.output().slice(-2000)}`);
    process.stderr.write(`# embedded PostgreSQL killed: the service ready again after ${Date.now() - killedAt} ms\n`);
    assert.match(served.output(), /the embedded PostgreSQL exited unasked \(SIGKILL\); starting it again/);
    served.child.kill('SIGTERM');
    assert.equal(await served.exit, 0, served.output());
    assert.throws(() => process.kill(restarted, 0), { code: 'ESRCH' }, 'the restarted postmaster is stopped with the service');
  });

  test('the owner killed with -9 leaves its embedded PostgreSQL running: the next `hwr serve` takes it over and stops it at its end', async () => {
    const env = {
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      WORKER_CONCURRENCY: '1',
      SHUTDOWN_GRACE_SECONDS: '1',
    };
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    const postmaster = async () => Number((await readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0]);
    const first = serve([], { ...env, PORT: String(await freePort()) }, 120_000);
    await waitForLog(first, '"hwr listening"');
    const orphan = await postmaster();
    first.child.kill('SIGKILL');
    await first.exit;
    assert.doesNotThrow(() => process.kill(orphan, 0), 'the postmaster outlived its owner');

    const second = serve([], { ...env, PORT: String(await freePort()) }, 120_000);
    await waitForLog(second, '"hwr listening"');
    assert.match(second.output(), new RegExp(`the embedded PostgreSQL \\(pid ${orphan}\\) was left running by a process that is gone`));
    assert.throws(() => process.kill(orphan, 0), { code: 'ESRCH' }, 'the orphan was stopped');
    const own = await postmaster();
    assert.ok(own > 0 && own !== orphan);
    second.child.kill('SIGTERM');
    assert.equal(await second.exit, 0, second.output());
    assert.throws(() => process.kill(own, 0), { code: 'ESRCH' }, 'the cluster it took over stops with it');
  });

  test('a database that accepts connections and never answers: the start fails within DATABASE_CONNECT_TIMEOUT_MS, saying so, and exits 1', async () => {
    // A TCP server that accepts and then stays silent: PostgreSQL's startup never gets its answer.
    const connectTimeoutMs = 1500;
    const sockets = new Set<net.Socket>();
    let firstAcceptedAt = 0;
    const silent = net.createServer((socket) => {
      firstAcceptedAt ||= Date.now();
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as net.AddressInfo).port;
    try {
      const served = serve(
        [],
        {
          DATA_DIR: dataDir,
          DATABASE_URL: `postgres://hwr:secret-password@127.0.0.1:${silentPort}/hwr`,
          DATABASE_CONNECT_TIMEOUT_MS: String(connectTimeoutMs),
          PORT: '0',
          HOST: '127.0.0.1',
          WORKER_CONCURRENCY: '1',
        },
        30_000,
      );
      const code = await served.exit;
      const exitedAt = Date.now();
      const output = served.output();
      assert.equal(code, 1, output);
      assert.ok(sockets.size >= 1, 'the service did connect to the silent server');
      assert.match(
        output,
        new RegExp(
          `could not connect to PostgreSQL at 127\\.0\\.0\\.1:${silentPort}/hwr: no answer within 1500 ms \\(DATABASE_CONNECT_TIMEOUT_MS\\)`,
        ),
        output,
      );
      assert.doesNotMatch(output, /secret-password/, 'the password stays out of the message');
      // Timed from its connection (not from Node's start, seconds on a loaded machine): it waited
      // the connect timeout, then stopped and exited (5 s of headroom for that on a loaded machine).
      const afterConnectMs = exitedAt - firstAcceptedAt;
      assert.ok(
        afterConnectMs >= connectTimeoutMs - 50 && afterConnectMs < connectTimeoutMs + 5_000,
        `exited ${afterConnectMs} ms after connecting, with a ${connectTimeoutMs} ms connect timeout`,
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  test("`npm start`, the README's command: a SIGTERM to npm reaches the service, which drains, stops and frees its port", async () => {
    const port = await freePort();
    const env = {
      DATABASE_URL: await createTestDatabase(),
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      SHUTDOWN_GRACE_SECONDS: '1',
    };
    const served = spawnServed('npm', ['start', '--silent', '--', '--role', 'api'], env, 60_000, true);
    try {
      await waitForLog(served, '"hwr listening"');
      // glibc's arenas: one, as in the image (docs/deployment.md, "Memory"), unless the caller chose
      const listening =
        served
          .output()
          .split('\n')
          .find((line) => line.includes('"hwr listening"')) ?? '';
      const pid = (JSON.parse(listening) as { pid: number }).pid;
      const environment = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
      assert.ok(environment.includes(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? '1'}`), environment.join(' '));
      // large blocks kept in the heap, as in the image (docs/deployment.md, "Memory")
      assert.ok(environment.includes(`MALLOC_MMAP_THRESHOLD_=${process.env.MALLOC_MMAP_THRESHOLD_ ?? '268435456'}`), environment.join(' '));
      assert.ok(environment.includes(`MALLOC_TRIM_THRESHOLD_=${process.env.MALLOC_TRIM_THRESHOLD_ ?? '536870912'}`), environment.join(' '));
      // tcmalloc preloaded where Debian's libtcmalloc-minimal4 is installed (ADR 0053), and loaded
      const preload = process.env.LD_PRELOAD ?? installedTcmalloc();
      assert.ok(environment.includes(`LD_PRELOAD=${preload}`), environment.join(' '));
      if (preload.endsWith('libtcmalloc_minimal.so.4'))
        assert.match(await readFile(`/proc/${pid}/maps`, 'utf8'), /libtcmalloc_minimal\.so\.4/);
      // V8's semi-spaces at most 4 MB, as in the image, before the caller's own NODE_OPTIONS (a later flag wins)
      const nodeOptions = `--max-semi-space-size=4 ${process.env.NODE_OPTIONS ?? ''}`;
      assert.ok(environment.includes(`NODE_OPTIONS=${nodeOptions}`), environment.join(' '));
      served.child.kill('SIGTERM');
      const code = await served.exit;
      assert.equal(code, 0, served.output());
      assert.match(served.output(), /"signal":"SIGTERM".*"msg":"shutting down/);
      // Under a shell that does not pass the signal on, npm used to exit and leave the service running.
      assert.equal(await canConnect(port), false, 'the port is free: nothing is left serving');
    } finally {
      try {
        process.kill(-(served.child.pid ?? 0), 'SIGKILL');
      } catch {
        // the group is gone: nothing was left
      }
    }
  });

  test('SIGTERM while an upload trickles in at 50 B/s: the API exits 0 soon after its grace instead of waiting for the body', async () => {
    const graceMs = 1000;
    const databaseUrl = await createTestDatabase();
    const admin = await startTestRuntime(await testConfig(databaseUrl));
    await createAccount(admin.bus, 'trickle');
    const { key } = await createApiKey(admin.bus, 'trickle', 'test');
    await admin.stop();
    const port = await freePort();
    const served = serve(
      ['--role', 'api'],
      { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', SHUTDOWN_GRACE_SECONDS: '1' },
      60_000,
    );
    await waitForLog(served, '"hwr listening"');
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    const boundary = 'trickle';
    socket.write(
      `POST /v1/process-scan HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${key}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 1000000\r\n\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="scan_zip"; filename="pages.zip"\r\nContent-Type: application/zip\r\n\r\n`,
    );
    const trickle = setInterval(() => socket.write(Buffer.alloc(10, 0x50)), 200);
    // The upload is in flight once the service writes it to its per-request directory.
    await waitUntil('the upload to reach the service', async () => {
      const root = tempUploadRoot(dataDir);
      const own = (await readdir(root).catch(() => [])).find((entry) => entry.includes(`~${served.child.pid}~`));
      return own !== undefined && (await readdir(path.join(root, own))).length > 0;
    });
    const stopAt = Date.now();
    served.child.kill('SIGTERM');
    const code = await served.exit;
    const stopMs = Date.now() - stopAt;
    clearInterval(trickle);
    socket.destroy();
    assert.equal(code, 0, served.output());
    // The body would take hours: the API waits its grace for it (1 s), then cuts it and stops
    // (10 s of headroom for stopping on a loaded machine).
    assert.ok(stopMs >= graceMs - 50 && stopMs < graceMs + 10_000, `stopped ${stopMs} ms after SIGTERM with a ${graceMs} ms grace`);
    process.stderr.write(`# trickling upload: stopped ${stopMs} ms after SIGTERM (grace 1 s)\n`);
  });

  test('SIGTERM while the network has cut the database off: the service still stops, exit 0, a few seconds after its grace', async () => {
    const databaseUrl = await createTestDatabase();
    const proxy = await startSilentProxy(databaseUrl);
    const served = serve(
      [],
      { DATABASE_URL: proxy.url, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', WORKER_CONCURRENCY: '1', SHUTDOWN_GRACE_SECONDS: '1' },
      60_000,
    );
    try {
      await waitForLog(served, '"hwr listening"');
      // The connections open now pass no byte more, either way.
      proxy.partition();
      const stopAt = Date.now();
      served.child.kill('SIGTERM');
      const code = await served.exit;
      const stopMs = Date.now() - stopAt;
      assert.equal(code, 0, served.output());
      // Each pool (pg-boss's, the service's) whose connections did not close is waited for as long
      // as the service says it waited, then left.
      const late = served
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; waited_ms?: number })
        .filter((entry) => entry.msg?.startsWith('database connections did not close in time'));
      assert.ok(late.length >= 1, served.output());
      const waitedMs = late.reduce((sum, entry) => sum + (entry.waited_ms ?? 0), 0);
      // The grace (1 s) and those waits, and 5 s of headroom for the rest of the stop on a loaded machine.
      assert.ok(
        stopMs >= waitedMs && stopMs < 1000 + waitedMs + 5_000,
        `stopped ${stopMs} ms after SIGTERM, ${waitedMs} ms of it waiting for connections`,
      );
      process.stderr.write(`# database cut off: stopped ${stopMs} ms after SIGTERM (grace 1 s)\n`);
    } finally {
      served.child.kill('SIGKILL');
      await proxy.close();
    }
  });
});
