// The embedded PostgreSQL its owner supervises (src/db/embedded-postgres.ts): a stop that comes
// while the supervisor waits to start a dead server again ends at once, leaving nothing running,
// in a process that has nothing else to keep it alive (as `hwr serve` at the end of its drain).
// (A server killed under a running service is started again: serve-lifecycle.test.ts.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../src/db/embedded-postgres.ts';

const dir = await mkdtemp(path.join(os.tmpdir(), 'hwr-supervision-'));
after(() => rm(dir, { recursive: true, force: true }));
const module = path.resolve(import.meta.dirname, '../../src/db/embedded-postgres.ts');

const SCENARIO = `
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres } from ${JSON.stringify(module)};
const [dataDir, port] = process.argv.slice(1);
const notices = [];
const db = await startEmbeddedPostgres({ dataDir, port: Number(port), notice: (line) => notices.push(line) });
const postmaster = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\\n')[0]);
// What Ctrl-C in a terminal used to send the server itself: it shuts down, unasked by its owner.
process.kill(postmaster, 'SIGINT');
while (!notices.some((line) => line.includes('exited unasked'))) await new Promise((resolve) => setTimeout(resolve, 20));
await db.stop();
console.log(JSON.stringify({ stopped: true, notices }));
`;

test('stop() during the wait before a restart returns, restarts nothing and removes the owner record; the process exits 0', async () => {
  const dataDir = path.join(dir, 'postgres');
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCENARIO, dataDir, String(await freePort())], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  // Exit code 13 ("unsettled top-level await") before: the wait's timer was unref'd, so nothing held the process while stop() awaited it.
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, output);
  const result = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as { stopped?: boolean; notices?: string[] };
  assert.equal(result.stopped, true, output);
  assert.ok(!result.notices?.some((line) => line.includes('running again')), output);
  assert.equal(existsSync(`${dataDir}.owner`), false, 'the owner record is removed');
  assert.equal(existsSync(path.join(dataDir, 'postmaster.pid')), false, 'no server left');
});
