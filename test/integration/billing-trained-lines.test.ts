// Trained lines in billing (docs/billing.md, "Trained models"; ADR 0033): a model's `lines_train`
// is billed in the period its training completed (`ModelTrained`), whether it is still ready or
// was retired since; a failed or cancelled training, and one still queued or training, bills
// nothing. The model streams are driven through the command bus as the API and the trainer drive
// them (no trainer runs here: its commands are sent as it sends them), with completion times set
// so that the period's bounds are exact: `from` inclusive, `to` exclusive.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { ModelCommand } from '../../domain/model-decide.ts';
import { billingReport } from '../../projections/billing.ts';
import { trainedLinesReport } from '../../projections/models.ts';
import { trainedModelPrefix } from '../../src/blobs/blob-keys.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const config = await testConfig(await createTestDatabase());
const runtime = await startTestRuntime(config, { page: testPagePipeline({ worker: 'billing' }), export: testExportPipeline() });
after(() => runtime.stop());

const trainer = { actor: 'trainer' };

async function queue(accountId: string): Promise<string> {
  const modelId = randomUUID();
  await runtime.bus.model(modelId, {
    type: 'QueueModelTraining',
    modelId,
    accountId,
    keyId: null,
    label: null,
    baseModel: 'default',
    groundTruthKey: `models/${modelId}/ground-truth/ground-truth.json`,
    pagesTotal: 2,
    linesTotal: 40,
    linesSkipped: { noText: 0, noGeometry: 0, outsideImage: 0, tooSmall: 0, unlearnableCharacters: 0 },
    warnings: [],
    now: new Date(),
  });
  return modelId;
}

async function start(modelId: string): Promise<void> {
  await runtime.bus.model(modelId, { type: 'StartModelTraining', now: new Date() }, trainer);
  await runtime.bus.model(modelId, { type: 'RecordModelProgress', epoch: 1, trainLoss: 2, validationCer: 0.3, now: new Date() }, trainer);
}

/** A model trained on `linesTrain` lines, its training completed at `finishedAt`; its id. */
async function ready(accountId: string, linesTrain: number, finishedAt: Date, cerAfter = 0.1): Promise<string> {
  const modelId = await queue(accountId);
  await start(modelId);
  const complete: ModelCommand = {
    type: 'CompleteModelTraining',
    cerBefore: 0.2,
    cerAfter,
    werBefore: 0.4,
    werAfter: 0.3,
    linesTrain,
    linesValidation: 8,
    trainingMinutes: 4,
    modelKey: trainedModelPrefix(modelId),
    now: finishedAt,
  };
  await runtime.bus.model(modelId, complete, trainer);
  return modelId;
}

const at = (iso: string) => new Date(iso);

describe('trained lines in billing', () => {
  test('the lines of models trained in the period, by account; retired later still billed; failed, cancelled, queued and training not', async () => {
    const accountId = await testAccount(runtime);
    const other = await testAccount(runtime);
    // October: two models, one of them retired in November (billed in October all the same), one not better than its base (billed: it is ready).
    await ready(accountId, 32, at('2026-10-01T00:00:00.000Z'));
    const retired = await ready(accountId, 24, at('2026-10-31T23:59:59.999Z'));
    await runtime.bus.model(retired, { type: 'RetireModel', now: at('2026-11-02T00:00:00.000Z') });
    await ready(accountId, 10, at('2026-10-15T12:00:00.000Z'), 0.5);
    // November: one model, completed at the period's first instant.
    await ready(accountId, 50, at('2026-11-01T00:00:00.000Z'));
    // Not billed: a training cancelled while queued, one cancelled while training, one failed, one queued, one training.
    await runtime.bus.model(await queue(accountId), { type: 'CancelModelTraining', now: new Date() });
    const cancelledTraining = await queue(accountId);
    await start(cancelledTraining);
    await runtime.bus.model(cancelledTraining, { type: 'CancelModelTraining', now: new Date() });
    const failed = await queue(accountId);
    await start(failed);
    await runtime.bus.model(failed, { type: 'FailModelTraining', reason: 'the trainer ran out of attempts', now: new Date() }, trainer);
    await queue(accountId);
    await start(await queue(accountId));
    // Another account's model is its own.
    await ready(other, 7, at('2026-10-20T00:00:00.000Z'));

    const lines = async (from: string | null, to: string | null) =>
      (await trainedLinesReport(runtime.db.pool, { accountId, from: from ? at(from) : null, to: to ? at(to) : null })).map(
        ({ models, lines }) => ({ models, lines }),
      );
    assert.deepEqual(await lines(null, null), [{ models: 4, lines: 116 }], 'every model trained, ever');
    assert.deepEqual(await lines('2026-10-01', '2026-11-01'), [{ models: 3, lines: 66 }], 'October: from inclusive, to exclusive');
    assert.deepEqual(await lines('2026-11-01', '2026-12-01'), [{ models: 1, lines: 50 }], 'November');
    assert.deepEqual(await lines('2026-12-01', null), [], 'nothing trained since');

    // The report `hwr billing` prints and GET /v1/usage reads: trained lines beside the jobs.
    const [report] = await billingReport(runtime.db.pool, { accountId, from: at('2026-10-01'), to: at('2026-11-01') });
    assert.deepEqual(
      { jobs: report.jobs, pages: report.pages, models_trained: report.models_trained, lines_trained: report.lines_trained },
      { jobs: 0, pages: 0, models_trained: 3, lines_trained: 66 },
    );
    const everyone = await billingReport(runtime.db.pool, { from: at('2026-10-01'), to: at('2026-11-01') });
    assert.deepEqual(
      Object.fromEntries(
        everyone.filter((line) => [accountId, other].includes(line.account_id)).map((line) => [line.account_id, line.lines_trained]),
      ),
      { [accountId]: 66, [other]: 7 },
      'every account with trained models, those without jobs too',
    );
    const names = everyone.map((line) => line.account);
    assert.deepEqual(
      names,
      [...names].sort((a, b) => a.localeCompare(b)),
      'by account name',
    );
    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
  });

  test('an account with done jobs and trained models has one line with both', async () => {
    const accountId = await testAccount(runtime);
    const jobId = await submitTestJob(runtime, accountId, 2);
    assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'done');
    await ready(accountId, 21, new Date());
    const report = await billingReport(runtime.db.pool, { accountId });
    assert.equal(report.length, 1);
    assert.deepEqual(
      { jobs: report[0].jobs, pages: report[0].pages, models_trained: report[0].models_trained, lines_trained: report[0].lines_trained },
      { jobs: 1, pages: 2, models_trained: 1, lines_trained: 21 },
    );
  });
});
