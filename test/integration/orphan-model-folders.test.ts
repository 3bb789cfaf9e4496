// Folders `models/<id>` whose model was never recorded (a process lost between storing the ground
// truth and appending ModelTrainingQueued) are deleted by the orphan sweep once an hour old; a
// recorded model's folder, a fresh one and anything that is not a model id stay. Partial files of
// stalled writes under `models/` (a trainer killed mid-checkpoint) go too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { groundTruthPrefix, MODELS_ROOT } from '../../src/blobs/blob-keys.ts';
import type { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { sweepOrphanModelFolders, sweepStalledWrites } from '../../src/workers/sweeps/orphan-blobs.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testAccount, testConfig } from '../support/engine.ts';

const config = await testConfig(await createTestDatabase(), {}, await mkdtemp(path.join(os.tmpdir(), 'hwr-orphan-models-')));
const runtime = await startTestRuntime(config);
after(() => runtime.stop());
const files = runtime.blobs as FilesystemBlobStore;
const log = createLogger('silent');
const HOURS = 3600_000;

async function age(target: string, ms: number): Promise<void> {
  const when = new Date(Date.now() - ms);
  if ((await stat(target)).isDirectory()) for (const entry of await readdir(target)) await age(path.join(target, entry), ms);
  await utimes(target, when, when);
}

async function modelFolder(modelId: string, ageMs: number): Promise<void> {
  await runtime.blobs.put(`${groundTruthPrefix(modelId)}/pages/0001.jpg`, Buffer.from('page'));
  await runtime.blobs.put(`${groundTruthPrefix(modelId)}/ground-truth.json`, Buffer.from('{}'));
  await age(files.localPath(`${MODELS_ROOT}/${modelId}`), ageMs);
}

const folders = async () => (await readdir(files.localPath(MODELS_ROOT))).sort();

test('model folders without a model are deleted once an hour old; recorded, fresh and foreign folders stay', async () => {
  const accountId = await testAccount(runtime);
  const recorded = randomUUID();
  await modelFolder(recorded, 0);
  await runtime.bus.model(recorded, {
    type: 'QueueModelTraining',
    modelId: recorded,
    accountId,
    keyId: null,
    label: null,
    baseModel: 'default',
    groundTruthKey: `${groundTruthPrefix(recorded)}/ground-truth.json`,
    pagesTotal: 1,
    linesTotal: 20,
    linesSkipped: { noText: 0, noGeometry: 0, outsideImage: 0, tooSmall: 0, unlearnableCharacters: 0 },
    warnings: [],
    now: new Date(),
  });
  await age(files.localPath(`${MODELS_ROOT}/${recorded}`), 2 * HOURS);
  const orphan = randomUUID();
  await modelFolder(orphan, 2 * HOURS);
  const fresh = randomUUID();
  await modelFolder(fresh, 10 * 60_000);
  await mkdir(files.localPath(`${MODELS_ROOT}/not-a-model`), { recursive: true });
  await age(files.localPath(`${MODELS_ROOT}/not-a-model`), 2 * HOURS);

  assert.deepEqual(await sweepOrphanModelFolders({ db: runtime.db.pool, blobs: runtime.blobs, log }), [orphan]);
  assert.deepEqual(await folders(), [recorded, fresh, 'not-a-model'].sort());
  assert.deepEqual(await sweepOrphanModelFolders({ db: runtime.db.pool, blobs: runtime.blobs, log }), [], 'idempotent');
  assert.deepEqual(await sweepOrphanModelFolders({ db: runtime.db.pool, blobs: runtime.blobs, log }, new Date(Date.now() + HOURS)), [
    fresh,
  ]);
  assert.deepEqual(await folders(), [recorded, 'not-a-model'].sort());
});

test("a stalled write's partial file under models/ is removed once an hour untouched", async () => {
  const modelId = randomUUID();
  await modelFolder(modelId, 0);
  // The filesystem store writes `<key>.<uuid>.tmp` and renames it into place; a killed writer leaves it.
  const partial = files.localPath(`${MODELS_ROOT}/${modelId}/run/checkpoint.pt.${randomUUID()}.tmp`);
  await mkdir(path.dirname(partial), { recursive: true });
  await writeFile(partial, Buffer.alloc(64));
  await age(partial, 2 * HOURS);
  const removed = await sweepStalledWrites({ blobs: runtime.blobs, log });
  assert.deepEqual(removed, [path.relative(files.root, partial).split(path.sep).join('/')]);
  assert.ok(await runtime.blobs.stat(`${groundTruthPrefix(modelId)}/ground-truth.json`), 'the blobs stay');
});
