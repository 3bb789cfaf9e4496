// `hwr projections reindex-search` as a real child process (docs/search.md, "Reindexing"): real
// jobs run through the service (the page pipeline answers with real ground-truth pages,
// support/ground-truth-search-pages.ts; the real export pipeline writes the archive and the
// index); then index rows are deleted and altered through SQL, the search over HTTP misses them,
// and the command writes them back from the stored page results, row for row as they were.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { createTestDatabase } from '../support/database.ts';
import { groundTruthSearchPipeline, SEARCH_PAGES } from '../support/ground-truth-search-pages.ts';
import { type Auth, createCredentials, makeZip, startApiServer, waitForState } from '../support/http-client.ts';

const root = path.resolve(import.meta.dirname, '../..');
const databaseUrl = await createTestDatabase();
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-reindex-'));
const server = await startApiServer(databaseUrl, {
  pipelines: { page: groundTruthSearchPipeline, export: createExportPipeline() },
  env: { DATA_DIR: dataDir },
});
after(async () => {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
});
const { client, runtime } = server;
const owner: Auth = { key: (await createCredentials(runtime, 'archive')).key };
const other: Auth = { key: (await createCredentials(runtime, 'library')).key };

async function runJob(auth: Auth): Promise<string> {
  const zip = await makeZip([
    { name: 'f207.jpg', data: await readFile(SEARCH_PAGES['f207.jpg'].imagePath) },
    { name: 'dracula.png', data: await readFile(SEARCH_PAGES['dracula.png'].imagePath) },
  ]);
  const submitted = await client.submit(zip, auth, { pipeline_steps: 'layout,recognition,export' });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  assert.equal((await waitForState(client, auth, submitted.body.job_id, ['done'], 60_000)).state, 'done');
  return submitted.body.job_id;
}

const [lost, garbled, untouched] = [await runJob(owner), await runJob(owner), await runJob(other)];

function hwr(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'src/cli/main.ts'), ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl, DATA_DIR: dataDir },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

/** A job's index rows as stored, in order. */
async function rowsOf(jobId: string): Promise<unknown[]> {
  return (
    await runtime.db.pool.query(
      'select page_number, line_index, line_id, account_id, text, words, alternatives, terms, tsv::text from search_lines where job_id = $1 order by page_number, line_index',
      [jobId],
    )
  ).rows;
}

async function hitsOf(q: string, auth: Auth = owner): Promise<{ job_id: string; line_id: string }[]> {
  const answer = await client.get(`/v1/search?q=${encodeURIComponent(q)}`, auth);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.hits;
}

test('rows deleted and altered through SQL are written back by the command, row for row, and the search finds them again', async () => {
  const before = { lost: await rowsOf(lost), garbled: await rowsOf(garbled), untouched: await rowsOf(untouched) };
  assert.ok(before.lost.length > 40, `${before.lost.length} lines indexed`);
  assert.equal((await hitsOf('imperturbable')).length, 2);

  // One job's rows all gone; another's altered (a line's text and words) and one line of it deleted.
  await runtime.db.pool.query('delete from search_lines where job_id = $1', [lost]);
  await runtime.db.pool.query(
    `update search_lines set text = 'garbled', words = '[]'::jsonb where job_id = $1 and text like '%imperturbable%'`,
    [garbled],
  );
  await runtime.db.pool.query(`delete from search_lines where job_id = $1 and text like '%remblayé%'`, [garbled]);
  assert.deepEqual(await hitsOf('imperturbable'), []);
  assert.deepEqual(await hitsOf('remblaye'), []);

  // Without options: the searchable jobs that have no rows, and only those.
  const missing = await hwr(['projections', 'reindex-search']);
  assert.equal(missing.code, 0, missing.stderr);
  const [job, summary] = jsonLines(missing.stdout);
  assert.deepEqual(job, { job_id: lost, lines: before.lost.length, changed: true });
  assert.deepEqual({ ...summary, seconds: 0 }, { reindexed: 1, changed: 1, lines: before.lost.length, seconds: 0 });
  assert.deepEqual(await rowsOf(lost), before.lost);
  assert.deepEqual(
    (await hitsOf('imperturbable')).map((hit) => hit.job_id),
    [lost],
  );

  // --job: that job's rows rewritten whatever they were.
  const one = await hwr(['projections', 'reindex-search', '--job', garbled.toUpperCase()]);
  assert.equal(one.code, 0, one.stderr);
  assert.deepEqual(jsonLines(one.stdout)[0], { job_id: garbled, lines: before.garbled.length, changed: true });
  assert.deepEqual(await rowsOf(garbled), before.garbled);
  assert.equal((await hitsOf('imperturbable')).length, 2);
  assert.equal((await hitsOf('remblaye')).length, 2);

  // --all: every searchable job read again, nothing left to change; --account: that account's only.
  await runtime.db.pool.query(`update search_lines set alternatives = 'stale' where job_id = $1 and line_index = 0`, [untouched]);
  const all = await hwr(['projections', 'reindex-search', '--all', '--account', 'archive']);
  assert.equal(all.code, 0, all.stderr);
  const report = jsonLines(all.stdout);
  assert.deepEqual(
    report
      .slice(0, -1)
      .map((line) => [line.job_id, line.changed])
      .sort(),
    [
      [lost, false],
      [garbled, false],
    ].sort(),
  );
  assert.notDeepEqual(await rowsOf(untouched), before.untouched, "the other account's job is left as it was");
  const everything = await hwr(['projections', 'reindex-search', '--all']);
  assert.equal(everything.code, 0, everything.stderr);
  assert.deepEqual(
    { ...jsonLines(everything.stdout).at(-1), seconds: 0 },
    {
      reindexed: 3,
      changed: 1,
      lines: before.lost.length + before.garbled.length + before.untouched.length,
      seconds: 0,
    },
  );
  assert.deepEqual(await rowsOf(untouched), before.untouched);
  assert.equal((await hitsOf('imperturbable', other)).length, 1);

  const verify = await hwr(['projections', 'verify']);
  assert.equal(verify.code, 0, verify.stdout);
});

test('a job that is not searchable: exit 1; usage errors: exit 2', async () => {
  const unknown = await hwr(['projections', 'reindex-search', '--job', '00000000-0000-4000-8000-000000000000']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /job 00000000-0000-4000-8000-000000000000 is not searchable/);
  const otherAccount = await hwr(['projections', 'reindex-search', '--job', untouched, '--account', 'archive']);
  assert.equal(otherAccount.code, 1);
  assert.match(otherAccount.stderr, /is not searchable in account archive/);
  for (const args of [
    ['reindex-search', '--job', 'nope'],
    ['reindex-search', '--all', '--job', lost],
    ['reindex-search', '--job'],
    ['rebuild', '--all'],
    ['reindex-search', '--bogus'],
  ]) {
    const run = await hwr(['projections', ...args]);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
  }
  const noAccount = await hwr(['projections', 'reindex-search', '--account', 'nobody']);
  assert.equal(noAccount.code, 1);
  assert.match(noAccount.stderr, /no account named nobody/);
});
