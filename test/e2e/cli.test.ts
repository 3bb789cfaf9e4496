// The `hwr` command as real child processes against a test database: accounts, keys,
// jobs events, projections verify/rebuild, billing, and `serve` (its logs, its graceful
// stop, and the first start on the embedded PostgreSQL).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { createTestDatabase } from '../support/database.ts';
import { ApiClient, pagesZip, startApiServer, waitForState, type Auth } from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const root = path.resolve(import.meta.dirname, '../..');
const databaseUrl = await createTestDatabase();
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-cli-'));
const pipelines = scriptedPipelines();
// An API with workers on the same database, to make jobs for `jobs events` and `billing`.
const service = await startApiServer(databaseUrl, { pipelines, env: { DATA_DIR: dataDir } });
const children = new Set<ChildProcess>();
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await service.close();
  await rm(dataDir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment of a CLI process: only what it needs, never the test runner's own settings. */
function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, ...extra };
}

function hwr(args: string[], extra: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), ...args], { cwd: root, env: cliEnv(extra) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function jsonLines(text: string): any[] {
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

async function ok(args: string[], extra?: Record<string, string>): Promise<string> {
  const run = await hwr(args, extra);
  assert.equal(run.code, 0, `hwr ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('hwr accounts and keys', () => {
  let webhookSecret = '';
  let key = '';

  test('accounts create NAME prints {"account_id","name","webhook_secret"} with a 64-hex secret', async () => {
    const stdout = await ok(['accounts', 'create', 'acme']);
    assert.equal(stdout.split('\n').length, 2, 'one line');
    const account = JSON.parse(stdout);
    assert.deepEqual(Object.keys(account), ['account_id', 'name', 'webhook_secret']);
    assert.match(account.account_id, /^[0-9a-f-]{36}$/);
    assert.equal(account.name, 'acme');
    assert.match(account.webhook_secret, /^[0-9a-f]{64}$/);
    webhookSecret = account.webhook_secret;
    const stored = await service.runtime.db.pool.query('select webhook_secret from account_secrets where account_id = $1', [
      account.account_id,
    ]);
    assert.equal(stored.rows[0].webhook_secret, webhookSecret);

    const again = await hwr(['accounts', 'create', 'acme']);
    assert.equal(again.code, 1);
    assert.equal(again.stdout, '');
    assert.match(again.stderr, /already exists/);
  });

  test('keys create prints the new key alone on one line; it authenticates', async () => {
    const stdout = await ok(['keys', 'create', '--account', 'acme', '--label', 'ci pipeline']);
    assert.match(stdout, /^hwr_[A-Za-z0-9_-]{40}\n$/);
    key = stdout.trim();
    const usage = await service.client.get('/v1/usage', { key });
    assert.equal(usage.status, 200);
    // Only the hash is stored.
    const stored = await service.runtime.db.pool.query('select key_hash from api_keys where key_hash = $1', [sha256(key)]);
    assert.equal(stored.rowCount, 1);
    const events = await service.runtime.db.pool.query(`select 1 from events where data::text like '%' || $1 || '%'`, [key]);
    assert.equal(events.rowCount, 0, 'the key is nowhere in the event log');
  });

  test('keys list prints one JSON object per key', async () => {
    const keys = jsonLines(await ok(['keys', 'list', '--account', 'acme']));
    assert.equal(keys.length, 1);
    assert.deepEqual(Object.keys(keys[0]), ['id', 'label', 'prefix', 'created_at', 'last_used_at', 'revoked_at']);
    assert.equal(keys[0].label, 'ci pipeline');
    assert.equal(keys[0].prefix, key.slice(0, 12));
    assert.equal(keys[0].revoked_at, null);
    assert.ok(!Number.isNaN(Date.parse(keys[0].created_at)));
  });

  test('keys revoke KEY_ID: the key gets 401 on the next request', async () => {
    const second = (await ok(['keys', 'create', '--account', 'acme', '--label', 'spare'])).trim();
    const [listed] = jsonLines(await ok(['keys', 'list', '--account', 'acme'])).filter((entry) => entry.prefix === key.slice(0, 12));
    assert.equal(await ok(['keys', 'revoke', listed.id]), '');
    const refused = await service.client.get('/v1/usage', { key, scheme: 'bearer' });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'invalid_api_key');
    assert.equal((await service.client.get('/v1/usage', { key: second })).status, 200, 'the other key still works');
    const after = jsonLines(await ok(['keys', 'list', '--account', 'acme']));
    assert.ok(after.find((entry) => entry.id === listed.id).revoked_at);
    assert.equal(after.find((entry) => entry.prefix === second.slice(0, 12)).revoked_at, null);

    const unknown = await hwr(['keys', 'revoke', '00000000-0000-4000-8000-000000000000']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no API key/);
  });

  test('accounts rotate-secret prints the new secret; the log keeps only its fingerprint', async () => {
    const stdout = await ok(['accounts', 'rotate-secret', 'acme']);
    assert.match(stdout, /^[0-9a-f]{64}\n$/);
    const secret = stdout.trim();
    assert.notEqual(secret, webhookSecret);
    const rotated = await service.runtime.db.pool.query(
      `select data from events where type = 'WebhookSecretRotated' order by global_position desc limit 1`,
    );
    assert.equal(rotated.rows[0].data.webhookSecretSha256, sha256(secret));
    const stored = await service.runtime.db.pool.query(
      `select s.webhook_secret from account_secrets s join accounts a using (account_id) where a.name = 'acme'`,
    );
    assert.equal(stored.rows[0].webhook_secret, secret);
  });

  test('usage errors exit non-zero with a message on stderr', async () => {
    for (const args of [
      ['keys', 'create', '--account', 'acme'],
      ['accounts', 'frobnicate', 'x'],
      ['keys', 'list', '--account', 'nobody'],
    ]) {
      const run = await hwr(args);
      assert.notEqual(run.code, 0, args.join(' '));
      assert.equal(run.stdout, '');
      assert.match(run.stderr, /usage|no account/);
    }
  });

  test('operator commands: an unknown option is a usage error (exit 2) before anything runs; --help prints the usage', async () => {
    // `serve --rol worker` started as role all (the API too); `migrate --help` ran the migrations.
    const misspelt = await hwr(['serve', '--rol', 'worker']);
    assert.deepEqual([misspelt.code, misspelt.stdout], [2, '']);
    assert.equal(misspelt.stderr, 'hwr serve: unknown option --rol\nusage: hwr serve [--role api|worker|trainer|all]\n');
    for (const [command, usage] of [
      ['serve', 'usage: hwr serve [--role api|worker|trainer|all]'],
      ['migrate', 'usage: hwr migrate'],
      ['storage', 'usage: hwr storage stats'],
    ]) {
      const help = await hwr([command, '--help']);
      assert.deepEqual([help.code, help.stdout, help.stderr], [0, `${usage}\n`, ''], command);
    }
    assert.equal((await hwr(['keys', 'create', '--account', 'acme', '--lable', 'x'])).code, 2);
    // Read as the command reads it: `-h` here is the label, not a request for help.
    const labelled = await hwr(['keys', 'create', '--account', 'acme', '--label', '-h']);
    assert.equal(labelled.code, 0, labelled.stderr);
    assert.match(labelled.stdout, /^hwr_[\w-]{40}\n$/);
  });
});

describe('hwr jobs, projections and billing', () => {
  let auth: Auth = null;
  let other = '';
  const jobs: Record<string, string> = {};

  test('jobs of every ending: done, failed, cancelled', async () => {
    auth = { key: (await ok(['keys', 'create', '--account', 'acme', '--label', 'jobs'])).trim() };
    await ok(['accounts', 'create', 'globex']);
    other = (await ok(['keys', 'create', '--account', 'globex', '--label', 'k'])).trim();
    jobs.done = (await service.client.submit(await pagesZip(['1.jpg', '2.jpg', '3.jpg']), auth)).body.job_id;
    jobs.failed = (await service.client.submit(await pagesZip(['1.jpg', 'fail-2.jpg']), auth)).body.job_id;
    jobs.cancelled = (await service.client.submit(await pagesZip(['hold-1.jpg']), auth)).body.job_id;
    jobs.otherDone = (await service.client.submit(await pagesZip(['1.jpg']), { key: other })).body.job_id;
    await waitForState(service.client, auth, jobs.cancelled, ['processing']);
    assert.equal((await service.client.delete(`/v1/process-scan/${jobs.cancelled}`, auth)).status, 200);
    assert.equal((await waitForState(service.client, auth, jobs.done, ['done', 'failed'])).state, 'done');
    assert.equal((await waitForState(service.client, auth, jobs.failed, ['done', 'failed'])).state, 'failed');
    assert.equal((await waitForState(service.client, { key: other }, jobs.otherDone, ['done', 'failed'])).state, 'done');
  });

  test('jobs events JOB_ID prints the history as JSON lines, the same as GET .../events', async () => {
    const printed = jsonLines(await ok(['jobs', 'events', jobs.done]));
    const served = (await service.client.get(`/v1/process-scan/${jobs.done}/events`, auth)).body.events;
    assert.deepEqual(printed, served);
    assert.equal(printed[0].type, 'JobQueued');
    assert.equal(printed.at(-1).type, 'JobSucceeded');
    const unknown = await hwr(['jobs', 'events', '00000000-0000-4000-8000-000000000000']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no job/);
    assert.equal((await hwr(['jobs', 'events', 'nope'])).code, 2, 'a usage error');
  });

  test('jobs events into a reader that has gone (`| head -1`): exit 0, no EPIPE stack trace', async () => {
    const closed = await new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), 'jobs', 'events', jobs.done], {
        cwd: root,
        env: cliEnv(),
      });
      // The read end closed before the first line: every write meets EPIPE.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout: '', stderr }));
    });
    assert.equal(closed.code, 0, closed.stderr);
    assert.doesNotMatch(closed.stderr, /EPIPE|Error/);
  });

  test('billing: pages of done jobs per account; failed and cancelled jobs are not billed', async () => {
    const lines = jsonLines(await ok(['billing']));
    const byAccount = Object.fromEntries(lines.map((line) => [line.account, line]));
    assert.equal(byAccount.acme.jobs, 1);
    assert.equal(byAccount.acme.pages, 3);
    assert.equal(byAccount.globex.pages, 1);
    // Per tier, what an invoice prices: the test pipeline corrects nothing, so every job is `none`.
    assert.deepEqual(byAccount.acme.tiers, { none: { jobs: 1, pages: 3, corrected_pages: 0 } });
    assert.equal(byAccount.acme.corrected_pages, 0);
    assert.deepEqual(
      jsonLines(await ok(['billing', '--account', 'globex'])).map((line) => [line.account, line.jobs, line.pages]),
      [['globex', 1, 1]],
    );
    const tomorrow = new Date(Date.now() + 24 * 3600 * 1000).toISOString().slice(0, 10);
    assert.equal((await ok(['billing', '--from', tomorrow])).trim(), '');
    assert.equal((await hwr(['billing', '--from', 'someday'])).code, 2, 'a usage error');
    // A misspelt option is refused, not run as if absent (it printed every account's totals).
    const misspelt = await hwr(['billing', '--acount', 'globex']);
    assert.deepEqual([misspelt.code, misspelt.stdout], [2, '']);
    assert.equal(misspelt.stderr, 'hwr billing: unknown option --acount\nusage: hwr billing [--account NAME] [--from DATE] [--to DATE]\n');
  });

  test('projections verify: exit 0; after a row is tampered with, exit 1 naming the table; rebuild repairs it', async () => {
    const clean = jsonLines(await ok(['projections', 'verify']));
    assert.equal(clean.at(-1).differences, 0);
    assert.ok(clean.at(-1).events > 0);

    await service.runtime.db.pool.query('update job_status set page_count = 99 where job_id = $1', [jobs.done]);
    const tampered = await hwr(['projections', 'verify']);
    assert.equal(tampered.code, 1);
    const report = jsonLines(tampered.stdout);
    assert.equal(report.at(-1).differences, 1);
    assert.equal(report[0].table, 'job_status');
    assert.equal(report[0].liveOnly[0].page_count, 99);
    assert.equal(report[0].replayedOnly[0].page_count, 3);

    const rebuilt = jsonLines(await ok(['projections', 'rebuild']));
    assert.ok(rebuilt[0].rebuilt.includes('job_status'));
    assert.equal(jsonLines(await ok(['projections', 'verify'])).at(-1).differences, 0);
    assert.equal((await service.client.get(`/v1/process-scan/${jobs.done}`, auth)).body.page_count, 3);
  });
});

/** Starts `hwr serve` as a child process and waits for its "hwr listening" log line. */
async function startServe(
  args: string[],
  extra: Record<string, string>,
): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), 'serve', ...args], { cwd: root, env: cliEnv(extra) });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  const deadline = Date.now() + 120_000;
  while (!output.includes('"hwr listening"')) {
    if (child.exitCode !== null) throw new Error(`hwr serve exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`hwr serve did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, output: () => output, exited };
}

describe('hwr serve', () => {
  test('--role api: answers, logs each request with its request id and never the key, stops cleanly on SIGTERM', async () => {
    const key = (await ok(['keys', 'create', '--account', 'acme', '--label', 'serve'])).trim();
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const serve = await startServe(['--role', 'api'], { PORT: String(port), HOST: '127.0.0.1', BASE_URL: baseUrl, LOG_LEVEL: 'debug' });
    const client = new ApiClient(baseUrl);
    assert.equal((await client.get('/healthz', null)).status, 200);
    const viaHeader = await client.get('/v1/usage', { key }, { 'X-Request-Id': 'cli-serve-test-1' });
    assert.equal(viaHeader.status, 200);
    assert.equal((await client.get('/v1/usage', { key, scheme: 'bearer' })).status, 200);
    assert.equal((await client.get('/v1/usage', { key: `${key}x` })).status, 401);
    const submitted = await client.submit(await pagesZip(['1.jpg']), { key });
    assert.equal(submitted.status, 202);

    serve.child.kill('SIGTERM');
    assert.equal(await serve.exited, 0);
    const lines = serve
      .output()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const requests = lines.filter((line) => line.msg === 'request');
    assert.ok(requests.some((line) => line.request_id === 'cli-serve-test-1' && line.path === '/v1/usage' && line.status === 200));
    assert.ok(
      lines.some((line) => line.msg === 'job submitted' && line.job_id === submitted.body.job_id && typeof line.request_id === 'string'),
    );
    assert.ok(lines.some((line) => line.msg === 'stopped'));
    assert.ok(!serve.output().includes(key.slice(4)), 'the key never reaches the logs');
  });

  test('first start on the embedded PostgreSQL creates account "default" and prints one key and the webhook secret once', async () => {
    const embeddedDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-first-start-'));
    try {
      const env = {
        DATABASE_URL: '',
        DATA_DIR: embeddedDir,
        EMBEDDED_POSTGRES_PORT: String(await freePort()),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      };
      const port = await freePort();
      const first = await startServe(['--role', 'api'], { ...env, PORT: String(port), BASE_URL: `http://127.0.0.1:${port}` });
      const printed = first.output();
      const key = /API key: +(hwr_\S+)/.exec(printed)?.[1];
      const secret = /Webhook secret: +([0-9a-f]+)/.exec(printed)?.[1];
      assert.ok(key, printed);
      assert.match(secret ?? '', /^[0-9a-f]{64}$/);
      assert.match(printed, /shown ONCE/);
      // The invite command as it must be typed elsewhere: this server's data folder and address (a
      // bare `hwr users invite` made a link to port 8080, or a new empty database).
      const invite = /invite its first user with `([^`]+)`/.exec(printed)?.[1] ?? '';
      assert.equal(
        invite,
        `DATA_DIR=${embeddedDir} PORT=${port} BASE_URL=http://127.0.0.1:${port} npm run -s hwr -- users invite --account default --email YOU@EXAMPLE.ORG`,
      );
      const invited = await hwr(['users', 'invite', '--account', 'default', '--email', 'first@example.org'], {
        DATABASE_URL: '',
        DATA_DIR: embeddedDir,
        PORT: String(port),
        BASE_URL: `http://127.0.0.1:${port}`,
      });
      assert.match(invited.stdout, new RegExp(`http://127\\.0\\.0\\.1:${port}/portal/setup\\?token=`), invited.stderr);
      const client = new ApiClient(`http://127.0.0.1:${port}`);
      const usage = await client.get('/v1/usage', { key: key! });
      assert.equal(usage.status, 200);
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0);

      const secondPort = await freePort();
      const second = await startServe(['--role', 'api'], { ...env, PORT: String(secondPort), BASE_URL: `http://127.0.0.1:${secondPort}` });
      assert.ok(!second.output().includes('API key:'), 'printed only on the first start');
      assert.equal((await new ApiClient(`http://127.0.0.1:${secondPort}`).get('/v1/usage', { key: key! })).status, 200);
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0);
    } finally {
      await rm(embeddedDir, { recursive: true, force: true });
    }
  });
});
