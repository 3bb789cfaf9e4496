import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createApiKey, createAccount, revokeApiKey, rotateWebhookSecret } from '../../src/commands/accounts.ts';
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
    assert.deepEqual(billing.map((row) => row.job_id), [done], 'only the done job is billed');
  });
});
