// A start that fails exits non-zero at once: `hwr serve` on a port already taken stops its
// workers and the embedded PostgreSQL it started, and exits 1 (it used to keep running).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '../../src/db/embedded-postgres.ts';

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
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

describe('hwr serve start failure', () => {
  test('a port already taken: workers and the embedded PostgreSQL are stopped and the process exits 1', async () => {
    const postgresPort = await freePort();
    const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), 'serve'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATA_DIR: dataDir,
        EMBEDDED_POSTGRES_PORT: String(postgresPort),
        PORT: String(takenPort),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        WORKER_CONCURRENCY: '1',
      },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    let listening = false;
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const postgresUp = (async () => {
      // The embedded PostgreSQL did start (so this checks that it is stopped, not that it never ran).
      while (child.exitCode === null) {
        if (await canConnect(postgresPort)) return (listening = true);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return listening;
    })();
    const code = await exit;
    clearTimeout(timer);
    assert.equal(code, 1, output);
    assert.match(output, /EADDRINUSE/);
    assert.ok(await postgresUp, 'the embedded PostgreSQL had started');
    assert.ok(output.includes('"start failed: stopping"'), output);
    assert.equal(await canConnect(postgresPort), false, 'the embedded PostgreSQL is stopped');
    assert.equal(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), false, 'no postmaster left');
  });
});
