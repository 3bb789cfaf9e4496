// A database from before page-scoped appends (migrations up to 0005): the job in flight when
// the new version starts keeps its history, its pages are not done twice, and it finishes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type pg from 'pg';
import { openDatabase } from '../../src/db/database.ts';
import { MIGRATIONS_DIR } from '../../src/store/migrate.ts';
import { PROJECTIONS } from '../../projections/index.ts';
import { pageTaskId, QUEUES } from '../../src/queue/queues.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, TEST_PAGE_PNG, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline, tinyPageResult, type PageLog } from '../support/test-pipelines.ts';

const url = await createTestDatabase();
const old = openDatabase(url, { max: 2 });
after(() => old.close());

test('a job recorded before page-scoped appends replays, keeps its completed pages and finishes', async () => {
  // The schema as the previous version left it: migrations 0001-0005 and its projections.
  const client = await old.pool.connect();
  try {
    for (const file of (await readdir(MIGRATIONS_DIR)).filter((name) => /^000[1-5]_/.test(name)).sort()) {
      await client.query(await readFile(path.join(MIGRATIONS_DIR, file), 'utf8'));
    }
    await client.query(
      'create table schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())',
    );
    for (const version of [1, 2, 3, 4, 5])
      await client.query('insert into schema_migrations (version, name) values ($1, $2)', [version, `000${version}`]);
    await installPreviousProjections(client);
  } finally {
    client.release();
  }

  // A 3-page job, page 1 done and page 2 in recognition, appended through the old 3-argument function.
  const jobId = '3f0c1f7e-6a55-4c55-9d0e-5b0a4d1f0a01';
  const accountId = '3f0c1f7e-6a55-4c55-9d0e-5b0a4d1f0a02';
  const pages = [1, 2, 3].map((n) => ({
    pageNumber: n,
    name: `${n}.png`,
    blobKey: `jobs/${jobId}/pages/000${n}.png`,
    sha256: createHash('sha256').update(TEST_PAGE_PNG).digest('hex'),
    bytes: TEST_PAGE_PNG.length,
  }));
  const history = [
    {
      type: 'JobQueued',
      data: {
        jobId,
        accountId,
        keyId: null,
        pageCount: 3,
        pages,
        options: {
          llmTier: 'cheap',
          preset: 'generic',
          pipelineSteps: ['layout', 'recognition', 'correction', 'export'],
          pdfFormat: 'pdfa-2b',
          webhookUrl: null,
        },
        uploadKey: `jobs/${jobId}/upload.zip`,
        createdAt: new Date().toISOString(),
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        idempotency: null,
      },
    },
    { type: 'JobStarted', data: { startedAt: new Date().toISOString() } },
    { type: 'StepStarted', data: { page: 1, step: 'layout' } },
    {
      type: 'PageCompleted',
      data: { page: 1, resultKey: `jobs/${jobId}/results/0001.json`, lineCount: 1, warnings: [], correction: null },
    },
    { type: 'StepStarted', data: { page: 2, step: 'recognition' } },
  ];
  await old.pool.query('select * from hwr_append_events($1, $2, $3)', [`job-${jobId}`, 0, JSON.stringify(history)]);

  // The new version starts on it: migration 0006 runs, workers pick up pages 2 and 3.
  const config = await testConfig(url, {}, await mkdtemp(path.join(os.tmpdir(), 'hwr-upgrade-')));
  const processed: PageLog[] = [];
  const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'new', processed }), export: testExportPipeline() });
  try {
    await runtime.blobs.put(`jobs/${jobId}/results/0001.json`, JSON.stringify(tinyPageResult({ page: pages[0] }, TEST_PAGE_PNG)));
    for (const page of pages) await runtime.blobs.put(page.blobKey, TEST_PAGE_PNG);
    const columns = await runtime.db.pool.query('select stream_version, page from events where stream_id = $1 order by stream_version', [
      `job-${jobId}`,
    ]);
    assert.deepEqual(
      columns.rows.map((row) => row.page),
      [null, null, 1, 1, 2],
      'the page column is derived for old events too',
    );

    // The page tasks of the old version are still queued; send them as it did.
    const view = await runtime.bus.loadPageView(runtime.db.pool, jobId, 1);
    assert.deepEqual(Object.keys(view?.state.completedPages ?? {}), ['1']);
    await runtime.boss.insert(
      QUEUES.page,
      pages.map((page) => ({ id: pageTaskId(jobId, page.pageNumber), data: { jobId, page: page.pageNumber } })),
    );

    assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'done');
    assert.deepEqual(processed.map((entry) => entry.page).sort(), [2, 3], 'page 1, completed before the upgrade, is not done again');
    const types = (
      await runtime.db.pool.query('select type from events where stream_id = $1 order by stream_version', [`job-${jobId}`])
    ).rows.map((row) => row.type);
    assert.equal(types.filter((type) => type === 'PageCompleted').length, 3);
    assert.equal(types.at(-1), 'JobSucceeded');
    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
  } finally {
    await runtime.stop();
  }
});

/** The projection code as the previous version installed it: unversioned names, one event per call. */
async function installPreviousProjections(client: pg.PoolClient): Promise<void> {
  for (const projection of PROJECTIONS) {
    await client.query(
      `create function hwr_project_${projection.name}(e events) returns void language plpgsql as $body$${projection.apply}$body$`,
    );
  }
  const dispatch = PROJECTIONS.map(
    (projection) =>
      `if e.type in (${projection.handles.map((type) => `'${type}'`).join(', ')}) then perform hwr_project_${projection.name}(e); end if;`,
  ).join('\n');
  await client.query(
    `create function hwr_apply_projections(e events) returns void language plpgsql as $body$ begin ${dispatch} end $body$`,
  );
}
