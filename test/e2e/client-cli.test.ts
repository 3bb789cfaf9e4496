// The client commands of `hwr` as real processes against real servers: `submit --wait --out`
// on two real scans through the real pipelines (the archive checked), JSON lines when not on
// a terminal, the progress bar under a pseudo-terminal (`script`), a failed and a cancelled
// job's exit codes, Ctrl-C during --wait (the job keeps running), status/result/cancel/
// events/usage, `hwr search` over the real job's words (docs/search.md), and the Python example of
// docs/client.md.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createApiKey, createAccount } from '../../src/use-cases/accounts.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { startHttpServer } from '../../src/server/http-server.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';
import { pagesZip, startApiServer, waitForState, ZIP_FIXTURES } from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const root = path.resolve(import.meta.dirname, '../..');
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-client-cli-'));
const children = new Set<ChildProcess>();

// A service with the scripted pipelines (fast; `fail-*` pages fail, `hold-*` pages wait).
const scripted = scriptedPipelines();
const service = await startApiServer(await createTestDatabase(), {
  pipelines: scripted,
  env: { DATA_DIR: path.join(work, 'scripted-data') },
});
await createAccount(service.runtime.bus, 'cli');
const key = (await createApiKey(service.runtime.bus, 'cli', 'client cli')).key;

// A service with the real pipelines, for the two real scans.
const realPort = await freePort();
const realConfig = await testConfig(
  await createTestDatabase(),
  // With no retry, a stall of a loaded machine past a short heartbeat would fail a job as a lost worker.
  { BASE_URL: `http://127.0.0.1:${realPort}`, WORKER_CONCURRENCY: '2', PAGE_RETRY_LIMIT: '0', TASK_HEARTBEAT_SECONDS: '60' },
  path.join(work, 'real-data'),
);
const realRuntime = await startTestRuntime(realConfig, await defaultPipelines(realConfig, createLogger('silent')));
const realServer = await startHttpServer(realRuntime, realPort, '127.0.0.1');
await createAccount(realRuntime.bus, 'real');
const realKey = (await createApiKey(realRuntime.bus, 'real', 'client cli')).key;

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await realServer.close();
  await realRuntime.stop();
  await rm(work, { recursive: true, force: true });
});

/** Page images on disk, named as the scripted pipelines read them. */
async function pagesDir(name: string, pages: string[]): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir, { recursive: true });
  for (const [index, page] of pages.entries())
    await copyFile(path.join(ZIP_FIXTURES, 'images', `line-${(index % 5) + 1}.jpg`), path.join(dir, page));
  return dir;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, HWR_URL: service.baseUrl, HWR_API_KEY: key, ...extra };
}

function start(
  args: string[],
  extra: Record<string, string> = {},
  node = process.execPath,
): { child: ChildProcess; done: Promise<Run>; stdout: () => string; stderr: () => string } {
  const child = spawn(node, [path.join(root, 'bin/hwr.js'), ...args], { cwd: work, env: env(extra) });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
  return { child, done, stdout: () => stdout, stderr: () => stderr };
}

const hwr = (args: string[], extra: Record<string, string> = {}): Promise<Run> => start(args, extra).done;
const jsonLines = (text: string): any[] =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

async function until(what: string, check: () => boolean, timeoutMs = 60_000, output = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('hwr submit on real scans', () => {
  /** The job the real scans made (the first test), searched by the second. */
  let realJobId = '';
  test('submit FOLDER --wait --out: three real pages (one a JP2 master) through the real pipelines, a valid archive, exit 0, JSON lines', async () => {
    const dir = path.join(work, 'real-pages');
    await mkdir(dir);
    await copyFile(path.join(root, 'test/fixtures/export/fondue_en_print_dracula_page_51.png'), path.join(dir, '10_dracula.png'));
    await copyFile(path.join(root, 'test/fixtures/export/cremma19_zola_f207.jpg'), path.join(dir, '2_zola.jpg'));
    // Zola's own layout beside its image: it goes with it, and the page keeps its lines.
    await copyFile(path.join(root, 'test/fixtures/export/cremma19_zola_f207.xml'), path.join(dir, '2_zola.xml'));
    await copyFile(path.join(root, 'test/fixtures/jpeg2000/copiste-lines.jp2'), path.join(dir, '11_copiste.jp2'));
    const out = path.join(work, 'r.zip');
    const run = await hwr(['submit', dir, '--wait', '--out', out, '--pdf-format', 'pdfa-2b'], {
      HWR_URL: realConfig.baseUrl,
      HWR_API_KEY: realKey,
    });
    assert.equal(run.code, 0, run.stderr);
    const lines = jsonLines(run.stdout);
    assert.deepEqual(lines[0], { event: 'zipped', images: 3, layouts: 1, bytes: lines[0].bytes });
    assert.equal(lines[1].event, 'submitted');
    assert.equal(lines[1].page_count, 3);
    const progress = lines.filter((line) => line.event === 'progress');
    assert.ok(progress.length >= 2, run.stdout);
    assert.equal(progress.at(-1).state, 'done');
    assert.equal(progress.at(-1).pages_done, 3);
    for (const [index, line] of progress.entries()) {
      if (index > 0) assert.ok(line.pages_done >= progress[index - 1].pages_done, 'pages done never goes back');
      assert.deepEqual(
        Object.keys(line).filter((name) => !['error_message', 'warning_message'].includes(name)),
        ['event', 'job_id', 'state', 'pages_done', 'page_count', 'current_step', 'elapsed_seconds'],
      );
    }
    const downloaded = lines.at(-1);
    assert.equal(downloaded.event, 'downloaded');
    assert.equal(downloaded.bytes, (await stat(out)).size);
    const checked = await checkResultArchive(await readFile(out));
    assert.equal(checked.manifest.job_id, lines[1].job_id);
    realJobId = lines[1].job_id;
    // Natural order: 2_zola before 10_dracula before 11_copiste.
    assert.deepEqual(
      checked.pages.map((page) => page.pageNumber),
      [1, 2, 3],
    );
    assert.match(JSON.stringify(checked.manifest), /2_zola\.jpg[\s\S]*10_dracula\.png[\s\S]*11_copiste\.jp2/);
    assert.deepEqual(
      checked.manifest.pages.map((page) => (page as { layout_source?: string }).layout_source),
      ['uploaded', 'detected', 'detected'],
    );
  });

  test("hwr search: the real job's recognised words as JSON lines, --job, --fuzzy, --all by pages; exit 0, 2, 4 and 5", async () => {
    assert.ok(realJobId, 'the real job of the test before');
    const real = { HWR_URL: realConfig.baseUrl, HWR_API_KEY: realKey };
    // A word of the recognised text (Dracula is page 2): the longest of letters alone, read back through the API.
    const page = (await (
      await fetch(`${realConfig.baseUrl}/v1/process-scan/${realJobId}/pages/2`, { headers: { 'X-API-Key': realKey } })
    ).json()) as { lines: { id: string; text: string }[] };
    const words = page.lines.flatMap((line) =>
      line.text
        .split(/\s+/)
        .filter((word) => /^\p{L}{6,}$/u.test(word))
        .map((word) => ({ line: line.id, word })),
    );
    assert.ok(words.length > 0, JSON.stringify(page.lines));
    const sought = words.reduce((longest, candidate) => (candidate.word.length > longest.word.length ? candidate : longest));

    const found = await hwr(['search', sought.word], real);
    assert.equal(found.code, 0, found.stderr);
    const hits = jsonLines(found.stdout);
    const hit = hits.find((each) => each.job_id === realJobId && each.page === 2 && each.line_id === sought.line);
    assert.ok(hit, `${sought.word} on line ${sought.line}: ${found.stdout}`);
    assert.ok(hit.highlight.includes(`<mark>${sought.word}</mark>`), hit.highlight);
    assert.equal(hit.page_url, `/v1/process-scan/${realJobId}/pages/2`);
    assert.ok(hit.word && hit.word.box.width > 0, JSON.stringify(hit.word));

    const inJob = await hwr(['search', sought.word, '--job', realJobId], real);
    assert.equal(inJob.code, 0, inJob.stderr);
    assert.ok(jsonLines(inJob.stdout).every((each) => each.job_id === realJobId));
    const elsewhere = await hwr(['search', sought.word, '--job', '00000000-0000-4000-8000-000000000000'], real);
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    assert.equal(elsewhere.stdout, '', 'no hit, no line');

    // A letter left out of the middle: not as written, found with --fuzzy 1.
    const typo = sought.word.slice(0, 3) + sought.word.slice(4);
    const exact = await hwr(['search', typo], real);
    assert.equal(exact.code, 0, exact.stderr);
    assert.ok(!jsonLines(exact.stdout).some((each) => each.line_id === sought.line && each.page === 2));
    const fuzzy = await hwr(['search', typo, '--fuzzy', '1'], real);
    assert.equal(fuzzy.code, 0, fuzzy.stderr);
    const close = jsonLines(fuzzy.stdout).find((each) => each.line_id === sought.line && each.page === 2);
    assert.ok(close, `${typo} --fuzzy 1: ${fuzzy.stdout}`);
    assert.ok(close.highlight.includes(`<mark>${sought.word}</mark>`), close.highlight);

    // Every hit of a common word, a page of one at a time (--all), as one page of a hundred gives them.
    const all = await hwr(['search', 'the', '--limit', '100'], real);
    assert.equal(all.code, 0, all.stderr);
    const expected = jsonLines(all.stdout);
    assert.ok(expected.length >= 3, all.stdout);
    const first = await hwr(['search', 'the', '--limit', '1'], real);
    assert.equal(jsonLines(first.stdout).length, 1);
    assert.match(first.stderr, /more hits: --all/);
    const paged = await hwr(['search', 'the', '--limit', '1', '--all'], real);
    assert.equal(paged.code, 0, paged.stderr);
    assert.deepEqual(jsonLines(paged.stdout), expected);

    // 2: usage; 5: refused by the service; 4: no service.
    for (const args of [['search'], ['search', 'x', '--bogus']]) assert.equal((await hwr(args, real)).code, 2, args.join(' '));
    assert.equal((await hwr(['search', 'x'], { ...real, HWR_API_KEY: '' })).code, 2);
    const refused = await hwr(['search', sought.word, '--fuzzy', '3'], real);
    assert.equal(refused.code, 5);
    assert.match(refused.stderr, /refused: 400 fuzzy must be 0, 1 or 2\./);
    const wrongKey = await hwr(['search', sought.word], { ...real, HWR_API_KEY: 'hwr_wrong' });
    assert.equal(wrongKey.code, 5);
    assert.match(wrongKey.stderr, /refused: 401/);
    const down = await hwr(['search', sought.word], { ...real, HWR_URL: `http://127.0.0.1:${await freePort()}` });
    assert.equal(down.code, 4);
    assert.match(down.stderr, /unreachable/);
  });
});

describe('hwr submit and the other client commands against the scripted service', () => {
  test('a failed job: exit 1, its error on stderr-free JSON lines; a usage error: exit 2; a refused key: exit 5', async () => {
    const dir = await pagesDir('failing', ['1.jpg', 'fail-2.jpg']);
    const failed = await hwr(['submit', dir, '--wait']);
    assert.equal(failed.code, 1, failed.stderr);
    const lines = jsonLines(failed.stdout);
    assert.equal(lines.at(-1).event, 'failed');
    assert.match(lines.at(-1).error_message, /fail-2\.jpg/);

    const usage = await hwr(['submit', '--tier', 'gold', dir]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--tier must be one of cheap, balanced, best/);
    // --out into a folder that is not there: refused before anything is sent (it failed after the job, billed).
    const jobCount = async () => (await service.runtime.db.pool.query('select count(*)::int as n from job_status')).rows[0].n as number;
    const before = await jobCount();
    const nowhere = await hwr(['submit', dir, '--out', path.join(work, 'no-such-folder', 'r.zip')]);
    assert.equal(nowhere.code, 2, nowhere.stderr);
    assert.match(nowhere.stderr, /--out .*no-such-folder.* does not exist or cannot be written to/);
    assert.equal(await jobCount(), before, 'no job was submitted');
    const bogus = await hwr(['status', '00000000-0000-4000-8000-000000000000', '--bogus']);
    assert.equal(bogus.code, 2);
    assert.match(bogus.stderr, /unknown option --bogus/);
    const noScheme = await hwr(['usage'], { HWR_URL: 'localhost:8080' });
    assert.equal(noScheme.code, 2);
    assert.match(noScheme.stderr, /the service URL localhost:8080 is not an http:\/\/ or https:\/\/ URL/);
    const unknown = await hwr(['frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^hwr: unknown command frobnicate\nusage: hwr/);
    const nothing = await hwr(['submit', path.join(work, 'missing')]);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /no such file or folder/);

    const refused = await hwr(['status', '00000000-0000-4000-8000-000000000000'], { HWR_API_KEY: 'hwr_wrong' });
    assert.equal(refused.code, 5); // refused (4xx); 4 is a service error (docs/client.md)
    assert.match(refused.stderr, /refused: 401 invalid_api_key/);
    const noKey = await hwr(['usage'], { HWR_API_KEY: '' });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /set HWR_API_KEY or --key/);
    const down = await hwr(['usage'], { HWR_URL: `http://127.0.0.1:${await freePort()}` });
    assert.equal(down.code, 4);
    assert.match(down.stderr, /ECONNREFUSED|fetch failed/);
  });

  test('submit without --wait prints the submission; status, events, result, usage; a ZIP is uploaded as it is', async () => {
    const zip = path.join(work, 'given.zip');
    await writeFile(zip, await pagesZip(['1.jpg', '2.jpg']));
    const submitted = await hwr(['submit', zip, '--idempotency-key', 'cli-test-1']);
    assert.equal(submitted.code, 0, submitted.stderr);
    const submission = JSON.parse(submitted.stdout);
    assert.equal(submission.state, 'queued');
    const again = JSON.parse((await hwr(['submit', zip, '--idempotency-key', 'cli-test-1'])).stdout);
    assert.equal(again.job_id, submission.job_id, 'the same Idempotency-Key gives the same job');

    const followed = await hwr(['status', submission.job_id, '--wait', '--out', 'followed.zip']);
    assert.equal(followed.code, 0, followed.stderr);
    const status = JSON.parse((await hwr(['status', submission.job_id])).stdout);
    assert.equal(status.state, 'done');
    assert.equal(status.pages_done, submission.page_count);

    const events = jsonLines((await hwr(['events', submission.job_id])).stdout);
    assert.equal(events[0].type, 'JobQueued');
    assert.equal(events.at(-1).type, 'JobSucceeded');

    const result = await hwr(['result', submission.job_id, '--out', 'fetched.zip']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await readFile(path.join(work, 'fetched.zip')), await readFile(path.join(work, 'followed.zip')));
    assert.equal(JSON.parse(result.stdout).bytes, (await stat(path.join(work, 'fetched.zip'))).size);

    const usage = JSON.parse((await hwr(['usage'])).stdout);
    assert.ok(usage.jobs >= 1);
    const notDone = await hwr(['result', '00000000-0000-4000-8000-000000000000']);
    assert.equal(notDone.code, 5);
    assert.match(notDone.stderr, /refused: 404 job_not_found/);
  });

  test('Ctrl-C during --wait leaves the job running and says how to follow or cancel it; cancel; a cancelled job exits 3', async () => {
    const dir = await pagesDir('held', ['hold-1.jpg']);
    const waiting = start(['submit', dir, '--wait']);
    await until('the job to be processing', () => waiting.stdout().includes('"state":"processing"'));
    const jobId = jsonLines(waiting.stdout()).find((line) => line.event === 'submitted').job_id;
    waiting.child.kill('SIGINT');
    const interrupted = await waiting.done;
    assert.equal(interrupted.code, 130);
    assert.match(interrupted.stderr, new RegExp(`job ${jobId} keeps running.*hwr status ${jobId} --wait.*hwr cancel ${jobId}`));
    assert.equal(jsonLines(interrupted.stdout).at(-1).event, 'interrupted');
    const status = JSON.parse((await hwr(['status', jobId])).stdout);
    assert.equal(status.state, 'processing', 'the job still runs');

    const following = start(['status', jobId, '--wait']);
    await until('the follower to print the status', () => following.stdout().includes('"progress"'));
    const cancelled = await hwr(['cancel', jobId]);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(JSON.parse(cancelled.stdout).state, 'cancelled');
    const followed = await following.done;
    assert.equal(followed.code, 3, followed.stderr);
    assert.equal(jsonLines(followed.stdout).at(-1).event, 'cancelled');
  });

  test("--wait outlives the service being away for longer than one request's retries: it says so, waits, and ends done", async () => {
    // A forwarder to the service that, while down, closes every connection at once (a restart).
    let down = false;
    let refusedWhileDown = 0;
    const open = new Set<net.Socket>();
    const target = new URL(service.baseUrl);
    const forwarder = net.createServer((socket) => {
      if (down) {
        refusedWhileDown++;
        return socket.destroy();
      }
      const upstream = net.connect(Number(target.port), target.hostname);
      socket.pipe(upstream).pipe(socket);
      for (const end of [socket, upstream]) {
        open.add(end);
        end.on('close', () => open.delete(end));
        end.on('error', () => {
          socket.destroy();
          upstream.destroy();
        });
      }
    });
    await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(forwarder.address() as net.AddressInfo).port}`;
      const dir = await pagesDir('outage', ['hold-1.jpg']);
      const waiting = start(['submit', dir, '--wait'], { HWR_URL: url });
      await until('the job to be processing', () => waiting.stdout().includes('"state":"processing"'));
      const jobId = jsonLines(waiting.stdout()).find((line) => line.event === 'submitted').job_id;
      down = true;
      for (const socket of open) socket.destroy();
      // One request's own retries end (about 15 s): the follower says so, and goes on asking.
      const saysSo = new RegExp(`the service does not answer .*job ${jobId} goes on there`);
      await until('the follower to say the service does not answer', () => saysSo.test(waiting.stderr()), 60_000, waiting.stderr);
      const triesBefore = refusedWhileDown;
      await until('the follower to ask again after saying so', () => refusedWhileDown > triesBefore);
      assert.equal(waiting.child.exitCode, null, 'still following');
      scripted.release(jobId);
      down = false;
      const ended = await waiting.done;
      assert.equal(ended.code, 0, ended.stderr);
      assert.equal(jsonLines(ended.stdout).at(-1).event, 'done');
      assert.match(ended.stderr, saysSo);
    } finally {
      forwarder.close();
    }
  });

  test('on a terminal (script): a progress bar with pages, step, elapsed and ETA; then the saved archive', {
    skip: hasScript() ? false : 'no `script` (util-linux) on this machine',
  }, async () => {
    const dir = await pagesDir('tty', ['1.jpg', '2.jpg', 'hold-3.jpg']);
    const command = [process.execPath, path.join(root, 'bin/hwr.js'), 'submit', dir, '--wait', '--out', 'tty.zip']
      .map((part) => `'${part}'`)
      .join(' ');
    const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { cwd: work, env: env({ TERM: 'xterm' }) });
    children.add(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    const code = new Promise<number | null>((resolve) => child.on('close', (exit) => resolve(exit)));
    // Two pages done, the third held: the bar shows 2/3, the step and an ETA; then the job is let go.
    await until(
      'the bar at 2/3 with its step and ETA',
      () => /\[█+░+\] 2\/3 pages +(layout|recognition|correction|export) +\d+:\d\d +ETA \d+:\d\d/.test(output),
      30_000,
      () => JSON.stringify(output),
    );
    scripted.release(/job ([0-9a-f-]{36}): 3 pages submitted/.exec(output)![1]);
    assert.equal(await code, 0, output);
    const screen = output.replace(/\r\n/g, '\n');
    assert.match(screen, /zipped 3 images/);
    assert.match(screen, /job [0-9a-f-]{36}: 3 pages submitted to http/);
    assert.match(screen, /\[█+░+\] 2\/3 pages +(layout|recognition|correction|export) +\d+:\d\d +ETA \d+:\d\d/);
    assert.match(screen, /\[█+\] 3\/3 pages +done +\d+:\d\d/);
    assert.match(screen, /done: 3 pages in \d+:\d\d; saved tty\.zip \(\d/);
    assert.ok(screen.includes('\r\x1b[2K'), 'the bar is redrawn in place');
    assert.ok(!screen.slice(screen.indexOf('done: 3 pages')).includes('░'), 'the bar is not drawn again after the closing line');
    assert.ok(!screen.includes('{"event"'), 'no JSON lines on a terminal');
    // The scripted service's export writes a small JSON file for an archive.
    assert.equal(JSON.parse(await readFile(path.join(work, 'tty.zip'), 'utf8')).pages.length, 3);
  });

  test('the bin under an older Node re-executes under the project Node; Ctrl-C reaches the command once', {
    skip: oldNode() === null ? 'no Node older than 22.18 on this machine' : false,
  }, async () => {
    const node = oldNode()!;
    const help = start(['--help'], {}, node);
    const helped = await help.done;
    assert.equal(helped.code, 0);
    assert.match(helped.stderr, /hwr submit PATH/);
    const dir = await pagesDir('held-old-node', ['hold-1.jpg']);
    const waiting = start(['submit', dir, '--wait'], {}, node);
    await until('the job to be processing', () => waiting.stdout().includes('"state":"processing"'));
    const jobId = jsonLines(waiting.stdout()).find((line) => line.event === 'submitted').job_id;
    waiting.child.kill('SIGINT');
    const interrupted = await waiting.done;
    assert.equal(interrupted.code, 130, interrupted.stderr);
    assert.equal(interrupted.stderr.match(/keeps running/g)?.length, 1);
    scripted.release(jobId);
    assert.equal((await waitForState(service.client, { key }, jobId, ['done'])).state, 'done');
  });
});

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The machine's own Node, when it is too old to strip types (Node 20 here). */
function oldNode(): string | null {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const version = execFileSync(candidate, ['-p', 'process.versions.node']).toString().trim();
    const [major, minor] = version.split('.').map(Number);
    if (major < 22 || (major === 22 && minor < 18)) return candidate;
  }
  return null;
}

describe('docs/client.md', () => {
  test('the Python example (standard library only) submits, waits and downloads against a real server', {
    skip: pythonPath() === null ? 'no python3' : false,
  }, async () => {
    const doc = await readFile(path.join(root, 'docs/client.md'), 'utf8');
    const example = /```python\n([\s\S]*?)```/.exec(doc)?.[1];
    assert.ok(example, 'docs/client.md has a python block');
    const script = path.join(work, 'example.py');
    await writeFile(script, example);
    const zip = path.join(work, 'python.zip');
    await writeFile(zip, await pagesZip(['1.jpg', '2.jpg']));
    const run = await new Promise<Run>((resolve) => {
      const child = spawn(pythonPath()!, [script, zip, path.join(work, 'python-result.zip')], { cwd: work, env: env() });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /done: 2 pages/);
    // The scripted service's export writes a small JSON file for an archive.
    assert.equal(JSON.parse(await readFile(path.join(work, 'python-result.zip'), 'utf8')).pages.length, 2);
  });
});

function pythonPath(): string | null {
  for (const candidate of ['python3']) {
    try {
      execFileSync(candidate, ['-c', 'import sys; assert sys.version_info >= (3, 8)'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not there
    }
  }
  return null;
}
