// Files a dead process leaves behind (docs/reliability.md): folders `jobs/<id>` whose job was
// never recorded (the process died between storing the pages and appending JobQueued) are
// deleted by a cron sweep in worker processes once an hour old, as are the partial files of
// writes a killed process left in a recorded job's folder; temporary uploads of a dead process
// are removed when an API starts.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { startHttpServer } from '../../src/server/http-server.ts';
import { TEMP_UPLOAD_INSTANCE, tempUploadRoot } from '../../src/intake/temp-uploads.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { sweepOrphanBlobs, sweepStalledWrites } from '../../src/workers/sweeps/orphan-blobs.ts';
import { QUEUES } from '../../src/queue/queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const config = await testConfig(await createTestDatabase(), {}, await mkdtemp(path.join(os.tmpdir(), 'hwr-orphans-')));
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'w' }), export: testExportPipeline() });
after(() => runtime.stop());
// The sweep's age test sets files' mtimes: the filesystem store's files (testConfig's default store).
const files = runtime.blobs as FilesystemBlobStore;
const log = createLogger('silent');
const HOURS = 3600_000;

/** Sets the modification time of a file or folder and everything in it. */
async function age(target: string, ms: number): Promise<void> {
  const when = new Date(Date.now() - ms);
  if ((await stat(target)).isDirectory()) for (const entry of await readdir(target)) await age(path.join(target, entry), ms);
  await utimes(target, when, when);
}

async function jobFolder(jobId: string, ageMs: number): Promise<string> {
  await runtime.blobs.put(`jobs/${jobId}/pages/0001.png`, Buffer.from('page'));
  await runtime.blobs.put(`jobs/${jobId}/upload.zip`, Buffer.from('zip'));
  const folder = files.localPath(`jobs/${jobId}`);
  await age(folder, ageMs);
  return folder;
}

async function blobKeys(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of runtime.blobs.walk(prefix)) keys.push(entry.key);
  return keys.sort();
}

const jobFolders = async () => (await readdir(files.localPath('jobs'))).sort();

describe('orphan files', () => {
  test('the sweep deletes job folders with no job once an hour old, and nothing else; a second run finds nothing', async () => {
    const accountId = await testAccount(runtime);
    const recorded = await submitTestJob(runtime, accountId, 1);
    assert.equal(await waitForJobState(runtime, recorded, ['done']), 'done');
    await age(files.localPath(`jobs/${recorded}`), 2 * HOURS);
    const orphan = randomUUID();
    await jobFolder(orphan, 2 * HOURS);
    const fresh = randomUUID(); // an intake in progress: pages stored, the job not yet recorded
    await jobFolder(fresh, 10 * 60_000);
    // A folder an hour old in which a page was just written is still in use.
    const busy = randomUUID();
    await jobFolder(busy, 2 * HOURS);
    await runtime.blobs.put(`jobs/${busy}/pages/0002.png`, Buffer.from('page 2'));
    await mkdir(files.localPath('jobs/not-a-job'), { recursive: true });
    await age(files.localPath('jobs/not-a-job'), 2 * HOURS);

    assert.deepEqual(await sweepOrphanBlobs({ db: runtime.db.pool, blobs: runtime.blobs, log }), [orphan]);
    assert.deepEqual(await jobFolders(), [recorded, fresh, busy, 'not-a-job'].sort());
    assert.ok(await runtime.blobs.stat(`jobs/${recorded}/pages/0001.png`), 'the recorded job keeps its files');
    assert.deepEqual(await sweepOrphanBlobs({ db: runtime.db.pool, blobs: runtime.blobs, log }), [], 'idempotent');
    // An hour later the folder of the intake that never recorded its job goes too.
    const later = await sweepOrphanBlobs({ db: runtime.db.pool, blobs: runtime.blobs, log }, new Date(Date.now() + HOURS));
    assert.deepEqual(later.sort(), [fresh, busy].sort());
    assert.deepEqual(await jobFolders(), [recorded, 'not-a-job'].sort());
  });

  test('the sweep removes the partial files of writes a killed process left in a recorded job, once an hour untouched, and nothing else', async () => {
    const accountId = await testAccount(runtime);
    const jobId = await submitTestJob(runtime, accountId, 1);
    assert.equal(await waitForJobState(runtime, jobId, ['done']), 'done');
    const before = await blobKeys(`jobs/${jobId}`);
    const killedMidWrite = async (key: string) => {
      // A process that writes a blob and is SIGKILLed before the write completes.
      const script = `
        import { readdirSync } from 'node:fs';
        import path from 'node:path';
        import { Readable } from 'node:stream';
        import { FilesystemBlobStore } from ${JSON.stringify(path.resolve(import.meta.dirname, '../../src/blobs/filesystem-blob-store.ts'))};
        const body = new Readable({ read() {} });
        body.push(Buffer.alloc(4096, 1));
        const store = new FilesystemBlobStore(${JSON.stringify(files.root)});
        void store.put(${JSON.stringify(key)}, body);
        // 'writing' once the partial file is there, however slow the machine.
        const target = store.localPath(${JSON.stringify(key)});
        const partial = () => {
          try {
            return readdirSync(path.dirname(target)).some((name) => name.startsWith(path.basename(target) + '.') && name.endsWith('.tmp'));
          } catch {
            return false; // its folder not made yet
          }
        };
        const check = setInterval(() => { if (partial()) { clearInterval(check); console.log('writing'); } }, 20);
        setInterval(() => {}, 1000);`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise((resolve) => child.stdout.once('data', resolve));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    };
    await killedMidWrite(`jobs/${jobId}/pages/0001.result.json`);
    await killedMidWrite(`jobs/${jobId}/result.zip`);
    const folder = files.localPath(`jobs/${jobId}`);
    const partials = async () => (await readdir(folder, { recursive: true })).filter((name) => name.endsWith('.tmp')).sort();
    const [pagePartial, archivePartial] = await partials().then((names) => [
      names.find((name) => name.startsWith('pages/'))!,
      names.find((name) => name.startsWith('result.zip.'))!,
    ]);
    assert.ok(pagePartial && archivePartial, 'each killed write left its partial file');
    await age(path.join(folder, pagePartial), 2 * HOURS);

    assert.deepEqual(await sweepStalledWrites({ blobs: runtime.blobs, log }), [`jobs/${jobId}/${pagePartial}`]);
    assert.deepEqual(await partials(), [archivePartial], 'a partial file touched within the hour stays');
    assert.deepEqual(await sweepStalledWrites({ blobs: runtime.blobs, log }), [], 'idempotent');
    assert.deepEqual(await sweepStalledWrites({ blobs: runtime.blobs, log }, new Date(Date.now() + HOURS)), [
      `jobs/${jobId}/${archivePartial}`,
    ]);
    assert.deepEqual(await partials(), []);
    const kept = await blobKeys(`jobs/${jobId}`);
    assert.deepEqual(kept, before, "the job's blobs are untouched");
  });

  test('worker processes run the sweep as a cron task', async () => {
    // Scheduled every ten minutes …
    const schedules = await runtime.db.pool.query<{ name: string; cron: string }>(
      'select name, cron from pgboss.schedule where name = $1',
      [QUEUES.sweepOrphanBlobs],
    );
    assert.deepEqual(schedules.rows, [{ name: QUEUES.sweepOrphanBlobs, cron: '*/10 * * * *' }]);
    // … and the task the schedule sends is run by the workers: given one now (as pg-boss's clock
    // does at the tenth minute), they delete an orphan folder an hour old.
    const orphan = randomUUID();
    await jobFolder(orphan, 2 * HOURS);
    const taskId = await runtime.boss.send(QUEUES.sweepOrphanBlobs, {});
    assert.ok(taskId);
    await waitUntil('the sweep task to be completed by a worker', async () => {
      const task = await runtime.db.pool.query<{ state: string }>('select state from pgboss.job where name = $1 and id = $2', [
        QUEUES.sweepOrphanBlobs,
        taskId,
      ]);
      return task.rows[0]?.state === 'completed';
    });
    assert.ok(!(await jobFolders()).includes(orphan), 'the orphan folder is gone');
  });

  test('an API start removes the temporary uploads of dead processes, and leaves live ones and recent unknown ones', async () => {
    const root = tempUploadRoot(config.dataDir);
    const host = TEMP_UPLOAD_INSTANCE.split('~')[0];
    const deadPid = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '0']);
      child.once('exit', () => resolve(child.pid!));
    });
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    after(() => sleeper.kill('SIGKILL'));
    const dirs = {
      dead: `${host}~${deadPid}~0badc0de`,
      // A restarted container: same host, same pid (1, say), another process.
      samePidEarlier: `${host}~${process.pid}~0ldt0ken`,
      live: `${host}~${sleeper.pid}~11ve0000`,
      otherHostRecent: `other-host~12~aaaaaaaa`,
      otherHostOld: `other-host~13~bbbbbbbb`,
      flatOld: randomUUID(),
      flatRecent: randomUUID(),
    };
    for (const dir of Object.values(dirs)) {
      await mkdir(path.join(root, dir, randomUUID()), { recursive: true });
      await writeFile(path.join(root, dir, 'upload_part'), 'partial upload');
    }
    await age(path.join(root, dirs.otherHostOld), 2 * HOURS);
    await age(path.join(root, dirs.flatOld), 2 * HOURS);
    await age(path.join(root, dirs.dead), 2 * 60_000);

    const server = await startHttpServer(runtime, 0, '127.0.0.1');
    await server.close();
    assert.deepEqual((await readdir(root)).sort(), [dirs.live, dirs.otherHostRecent, dirs.flatRecent].sort());
  });
});
