// The models read model on its own: one row per model stream, its state through a training,
// the progress curve (its times written in UTC, whatever the session's zone), the figures, a
// failure, a cancel, a retirement; and a replay from zero gives the same rows.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { modelsProjection, readAccountModel, listAccountModels } from '../../projections/models.ts';
import { projectionFunctionName, projectionsVersion } from '../../src/store/install-projections.ts';
import { projectionSpec, SPEC_RECORDED_AT, type GivenEvent } from '../support/projection-spec.ts';

const spec = await projectionSpec(modelsProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const B = 'a0000000-0000-4000-8000-000000000002';
const M1 = 'c0000000-0000-4000-8000-000000000001';
const M2 = 'c0000000-0000-4000-8000-000000000002';
const M3 = 'c0000000-0000-4000-8000-000000000003';
const SKIPS = { noText: 1, noGeometry: 0, outsideImage: 2, tooSmall: 0, unlearnableCharacters: 0 };

const queued = (model: string, account: string, createdAt: string): GivenEvent => ({
  streamId: `model-${model}`,
  type: 'ModelTrainingQueued',
  data: {
    modelId: model,
    accountId: account,
    keyId: null,
    label: model === M1 ? 'Hooker' : null,
    baseModel: 'default',
    groundTruthKey: `models/${model}/ground-truth/ground-truth.json`,
    pagesTotal: 3,
    linesTotal: 61,
    linesSkipped: SKIPS,
    warnings: ['ignored 1 XML file that is not PageXML or ALTO: "mets.xml"'],
    createdAt,
  },
});

describe('models projection', () => {
  test('queued, training with two epochs, trained; failed; cancelled and retired; replay from zero gives the same rows', async () => {
    await spec.given([
      queued(M1, A, '2026-12-01T09:00:00.000Z'),
      queued(M2, A, '2026-12-01T10:00:00.000Z'),
      queued(M3, B, '2026-12-01T11:00:00.000Z'),
      { streamId: `model-${M1}`, type: 'ModelTrainingStarted', data: { startedAt: '2026-12-01T09:01:00.000Z' } },
      { streamId: `model-${M1}`, type: 'ModelTrainingProgressed', data: { epoch: 1, trainLoss: 2.5, validationCer: 0.3 } },
      {
        streamId: `model-${M1}`,
        type: 'ModelTrainingProgressed',
        data: { epoch: 2, trainLoss: 1.25, validationCer: 0.125 },
        recordedAt: '2026-12-01T09:05:00.250Z',
      },
      {
        streamId: `model-${M1}`,
        type: 'ModelTrained',
        data: {
          finishedAt: '2026-12-01T09:10:00.000Z',
          cerBefore: 0.18,
          cerAfter: 0.09,
          werBefore: 0.35,
          werAfter: 0.2,
          linesTrain: 49,
          linesValidation: 12,
          trainingMinutes: 8.5,
          modelKey: `models/${M1}/model`,
          notBetter: false,
        },
      },
      { streamId: `model-${M2}`, type: 'ModelTrainingStarted', data: { startedAt: '2026-12-01T10:01:00.000Z' } },
      { streamId: `model-${M2}`, type: 'ModelTrainingFailed', data: { failedAt: '2026-12-01T10:02:00.000Z', reason: 'out of memory' } },
      {
        streamId: `model-${M3}`,
        type: 'ModelTrainingCancelled',
        data: { cancelledAt: '2026-12-01T11:00:30.000Z', previousState: 'queued' },
      },
      { streamId: `model-${M1}`, type: 'ModelRetired', data: { retiredAt: '2026-12-02T09:00:00.000Z' } },
    ]);
    const untrained = {
      label: null,
      lines_total: 61,
      lines_skipped: SKIPS,
      epoch: null,
      train_loss: null,
      validation_cer: null,
      progress_history: [],
      cer_before: null,
      cer_after: null,
      lines_train: null,
      training_minutes: null,
      model_key: null,
      not_better: null,
    };
    await spec.thenRows('models', 'model_id', [
      {
        model_id: M1,
        account_id: A,
        label: 'Hooker',
        state: 'retired',
        started_at: '2026-12-01T09:01:00.000Z',
        finished_at: '2026-12-01T09:10:00.000Z',
        lines_total: 61,
        lines_skipped: SKIPS,
        epoch: 2,
        train_loss: 1.25,
        validation_cer: 0.125,
        progress_history: [
          { epoch: 1, train_loss: 2.5, validation_cer: 0.3, recorded_at: SPEC_RECORDED_AT },
          { epoch: 2, train_loss: 1.25, validation_cer: 0.125, recorded_at: '2026-12-01T09:05:00.250Z' },
        ],
        cer_before: 0.18,
        cer_after: 0.09,
        lines_train: 49,
        training_minutes: 8.5,
        model_key: `models/${M1}/model`,
        not_better: false,
        error_message: null,
        version: 6,
      },
      {
        ...untrained,
        model_id: M2,
        account_id: A,
        state: 'failed',
        started_at: '2026-12-01T10:01:00.000Z',
        finished_at: '2026-12-01T10:02:00.000Z',
        error_message: 'out of memory',
        version: 3,
      },
      {
        ...untrained,
        model_id: M3,
        account_id: B,
        state: 'cancelled',
        started_at: null,
        finished_at: '2026-12-01T11:00:30.000Z',
        error_message: null,
        version: 2,
      },
    ]);
    await spec.replayFromZero();
    // Replayed in a session of another time zone: the same curve (its times are written in UTC).
    const apply = projectionFunctionName(modelsProjection.name, projectionsVersion());
    const client = await spec.db.pool.connect();
    try {
      await client.query("set timezone = 'Pacific/Chatham'");
      await client.query('begin');
      await client.query('truncate models');
      await client.query(`select ${apply}(e) from (select * from events order by global_position) e`);
      const row = await client.query('select progress_history from models where model_id = $1', [M1]);
      assert.deepEqual(
        row.rows[0].progress_history.map((point: { recorded_at: string }) => point.recorded_at),
        [SPEC_RECORDED_AT, '2026-12-01T09:05:00.250Z'],
      );
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  test("reads: an account's models newest first; another account's model is not found", async () => {
    assert.deepEqual(
      (await listAccountModels(spec.db.pool, A, 10)).map((row) => row.model_id),
      [M2, M1],
    );
    assert.equal((await readAccountModel(spec.db.pool, M3, B))?.state, 'cancelled');
    assert.equal(await readAccountModel(spec.db.pool, M3, A), undefined);
    assert.deepEqual((await readAccountModel(spec.db.pool, M1, A))?.warnings, [
      'ignored 1 XML file that is not PageXML or ALTO: "mets.xml"',
    ]);
  });
});
