import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { createApiKey, createAccount, revokeApiKey, rotateWebhookSecret } from '../../src/use-cases/accounts.ts';
import { PROJECTIONS } from '../../projections/index.ts';
import { dispatcherName, installProjections, PROJECTION_DISPATCHER, projectionsVersion } from '../../src/store/install-projections.ts';
import { rebuildProjections, verifyProjections } from '../../src/store/replay-projections.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const config = await testConfig(await createTestDatabase());
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'w', failPages: [5] }), export: testExportPipeline() });
after(() => runtime.stop());

describe('projections rebuild and verify', () => {
  test('a rebuild after a workload reproduces the live projections; an altered row fails verify', async () => {
    const account = await createAccount(runtime.bus, 'rebuild-test');
    const key = await createApiKey(runtime.bus, 'rebuild-test', 'one');
    await createApiKey(runtime.bus, 'rebuild-test', 'two');
    await revokeApiKey(runtime.bus, key.keyId);
    await rotateWebhookSecret(runtime.bus, 'rebuild-test');
    const done = await submitTestJob(runtime, account.accountId, 3);
    const failed = await submitTestJob(runtime, account.accountId, 5);
    const cancelled = await submitTestJob(runtime, account.accountId, 40, { webhookUrl: null });
    await runtime.bus.job(cancelled, { type: 'CancelJob', now: new Date() });
    await waitForJobState(runtime, done, ['done']);
    await waitForJobState(runtime, failed, ['failed']);

    const clean = await verifyProjections(runtime.db.pool);
    assert.deepEqual(clean.differences, []);
    assert.ok(clean.events >= 20);

    await runtime.db.pool.query(`update job_status set pages_done = 99 where job_id = $1`, [done]);
    await runtime.db.pool.query(`delete from billing where job_id = $1`, [done]);
    const altered = await verifyProjections(runtime.db.pool);
    assert.deepEqual(altered.differences.map((difference) => difference.table).sort(), ['billing', 'job_status']);

    const rebuilt = await rebuildProjections(runtime.db.pool);
    assert.ok(rebuilt.events >= clean.events);
    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
    const status = (await runtime.db.pool.query('select pages_done from job_status where job_id = $1', [done])).rows[0];
    assert.equal(status.pages_done, 3);
    const billing = (await runtime.db.pool.query('select job_id from billing where account_id = $1', [account.accountId])).rows;
    assert.deepEqual(
      billing.map((row) => row.job_id),
      [done],
      'only the done job is billed',
    );
  });
});

describe('projection code versions', () => {
  test("two versions of the projection code run side by side: each append projects with its caller's version, and reinstalling one leaves the other alone", async () => {
    // Version B: the accounts projection stores names upper-cased (an observable difference).
    const versionB = PROJECTIONS.map((projection) =>
      projection.name === 'accounts'
        ? { ...projection, apply: projection.apply.replace("e.data->>'name'", "upper(e.data->>'name')") }
        : projection,
    );
    assert.notEqual(projectionsVersion(versionB), projectionsVersion());
    const client = await runtime.db.pool.connect();
    try {
      await installProjections(client, versionB);
      await installProjections(client); // version A starts again (a rolling deploy's old pod restarting)
    } finally {
      client.release();
    }
    const appendAccountCreated = async (dispatcher: string, name: string) => {
      const accountId = randomUUID();
      const event = {
        type: 'AccountCreated',
        data: { accountId, name, createdAt: new Date().toISOString(), webhookSecretSha256: 'x' },
        metadata: {},
      };
      await runtime.db.pool.query('select * from hwr_append_to_stream($1, $2, 0, $3, false, null, true)', [
        dispatcher,
        `account-${accountId}`,
        JSON.stringify([event]),
      ]);
      return (await runtime.db.pool.query('select name from accounts where account_id = $1', [accountId])).rows[0].name;
    };
    assert.equal(await appendAccountCreated(PROJECTION_DISPATCHER, 'side-by-side-a'), 'side-by-side-a');
    assert.equal(await appendAccountCreated(dispatcherName(projectionsVersion(versionB)), 'side-by-side-b'), 'SIDE-BY-SIDE-B');
  });

  test('a rebuild swaps the tables in while submissions and page work go on, and verify then finds nothing', async () => {
    const account = await createAccount(runtime.bus, `busy-${randomUUID().slice(0, 8)}`);
    // Four pages each: this file's pipeline fails page 5.
    const jobs = await Promise.all([1, 2, 3, 4].map(() => submitTestJob(runtime, account.accountId, 4)));
    const [rebuilt] = await Promise.all([
      rebuildProjections(runtime.db.pool),
      ...jobs.map((job) => waitForJobState(runtime, job, ['done'])),
      submitTestJob(runtime, account.accountId, 3),
    ]);
    assert.ok(rebuilt.events > 0);
    await Promise.all(jobs.map((job) => waitForJobState(runtime, job, ['done'])));
    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
    const leftovers = await runtime.db.pool.query(
      `select nspname from pg_namespace where nspname like 'hwr_retired_%' or nspname like 'hwr_replay_%'`,
    );
    assert.deepEqual(leftovers.rows, []);
  });
});
