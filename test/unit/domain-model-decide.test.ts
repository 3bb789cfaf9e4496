// The model decider: given the events of a model, when a command, then these events or this
// rejection (test/support/decider-spec.ts). The trainer's commands are idempotent (ADR 0010).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { GroundTruthSkips, ModelEvent } from '../../domain/events.ts';
import { decideModel, type ModelCommand } from '../../domain/model-decide.ts';
import { evolveModel, foldModel, initialModelState } from '../../domain/model.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const model = deciderSpec({ decide: decideModel, evolve: evolveModel, initialState: initialModelState });

const T0 = new Date('2026-12-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();
const MODEL = '7a1c1d0e-1111-4222-8333-444455556666';
const SKIPS: GroundTruthSkips = { noText: 2, noGeometry: 0, outsideImage: 1, tooSmall: 3, unlearnableCharacters: 0 };

// Commands.
const queue: ModelCommand = {
  type: 'QueueModelTraining',
  modelId: MODEL,
  accountId: 'acc',
  keyId: 'key',
  label: 'Hooker letters',
  baseModel: 'default',
  groundTruthKey: `models/${MODEL}/ground-truth/ground-truth.json`,
  pagesTotal: 3,
  linesTotal: 60,
  linesSkipped: SKIPS,
  warnings: ['a warning'],
  now: T0,
};
const start: ModelCommand = { type: 'StartModelTraining', now: at(5) };
const progress = (epoch: number, validationCer = 0.2): ModelCommand => ({
  type: 'RecordModelProgress',
  epoch,
  trainLoss: 1.5 / epoch,
  validationCer,
  now: at(10 + epoch),
});
const complete = (cerBefore: number, cerAfter: number, cerMargin?: number): ModelCommand => ({
  type: 'CompleteModelTraining',
  cerBefore,
  cerAfter,
  ...(cerMargin === undefined ? {} : { cerMargin }),
  werBefore: 0.4,
  werAfter: 0.3,
  linesTrain: 48,
  linesValidation: 12,
  trainingMinutes: 4.5,
  modelKey: `models/${MODEL}/model`,
  now: at(300),
});
const fail: ModelCommand = { type: 'FailModelTraining', reason: 'the trainer exited with status 1', now: at(60) };
const cancel: ModelCommand = { type: 'CancelModelTraining', now: at(30) };
const retire: ModelCommand = { type: 'RetireModel', now: at(900) };

// Facts.
const queued: ModelEvent = {
  type: 'ModelTrainingQueued',
  data: {
    modelId: MODEL,
    accountId: 'acc',
    keyId: 'key',
    label: 'Hooker letters',
    baseModel: 'default',
    groundTruthKey: `models/${MODEL}/ground-truth/ground-truth.json`,
    pagesTotal: 3,
    linesTotal: 60,
    linesSkipped: SKIPS,
    warnings: ['a warning'],
    createdAt: iso(0),
  },
};
const started: ModelEvent = { type: 'ModelTrainingStarted', data: { startedAt: iso(5) } };
const progressed = (epoch: number, validationCer = 0.2): ModelEvent => ({
  type: 'ModelTrainingProgressed',
  data: { epoch, trainLoss: 1.5 / epoch, validationCer },
});
const trained = (cerBefore: number, cerAfter: number): ModelEvent => ({
  type: 'ModelTrained',
  data: {
    finishedAt: iso(300),
    cerBefore,
    cerAfter,
    werBefore: 0.4,
    werAfter: 0.3,
    linesTrain: 48,
    linesValidation: 12,
    trainingMinutes: 4.5,
    modelKey: `models/${MODEL}/model`,
    cerMargin: 0,
    notBetter: !(cerAfter < cerBefore),
  },
});
const failed: ModelEvent = { type: 'ModelTrainingFailed', data: { failedAt: iso(60), reason: 'the trainer exited with status 1' } };
const retired: ModelEvent = { type: 'ModelRetired', data: { retiredAt: iso(900) } };

describe('queue', () => {
  test('a new model is queued with its ground truth, counts and warnings', () => {
    const state = model.given().when(queue).then([queued]);
    assert.equal(state.status, 'queued');
    assert.equal(state.accountId, 'acc');
    assert.equal(state.linesTotal, 60);
    assert.deepEqual(state.linesSkipped, SKIPS);
  });

  test('an id taken is refused', () => model.given([queued]).when(queue).thenRejects('model_already_exists'));

  test('ground truth without a line is a programming error, not a fact', () => {
    assert.throws(() => decideModel(initialModelState(), { ...queue, linesTotal: 0 } as ModelCommand), /at least one page and one line/);
  });

  test('every other command of a model that does not exist: model_not_found', () => {
    for (const command of [start, progress(1), complete(0.2, 0.1), fail, cancel, retire])
      model.given().when(command).thenRejects('model_not_found');
  });
});

describe('training', () => {
  test('queued → training → epochs → ready, with the figures; better than its base', () => {
    model.given([queued]).when(start).then([started]);
    model
      .given([queued, started])
      .when(progress(1))
      .then([progressed(1)]);
    model
      .given([queued, started, progressed(1)])
      .when(progress(2, 0.15))
      .then([progressed(2, 0.15)]);
    const state = model
      .given([queued, started, progressed(1), progressed(2, 0.15)])
      .when(complete(0.18, 0.09))
      .then([trained(0.18, 0.09)]);
    assert.equal(state.status, 'ready');
    assert.equal(state.notBetter, false);
    assert.equal(state.modelKey, `models/${MODEL}/model`);
  });

  test('a model no better than its base (equal or worse) is kept, marked not_better', () => {
    const [worse] = model.given([queued, started]).when(complete(0.18, 0.25)).events();
    assert.equal(worse.type === 'ModelTrained' && worse.data.notBetter, true);
    const [equal] = model.given([queued, started]).when(complete(0.18, 0.18)).events();
    assert.equal(equal.type === 'ModelTrained' && equal.data.notBetter, true);
  });

  test('a gain within the measure’s noise (the margin) is no gain; beyond it, it is', () => {
    const [within] = model
      .given([queued, started])
      .when(complete(0.8, 0.78, 0.03))
      .events();
    assert.equal(within.type === 'ModelTrained' && within.data.notBetter, true);
    assert.equal(within.type === 'ModelTrained' && within.data.cerMargin, 0.03);
    const [beyond] = model
      .given([queued, started])
      .when(complete(0.18, 0.12, 0.03))
      .events();
    assert.equal(beyond.type === 'ModelTrained' && beyond.data.notBetter, false);
  });

  test('a retried task: starting again, an epoch reported again (resumed from a checkpoint), completing again: nothing new', () => {
    model.given([queued, started]).when(start).thenNothing();
    model
      .given([queued, started, progressed(1), progressed(2)])
      .when(progress(2))
      .thenNothing();
    model
      .given([queued, started, progressed(1), progressed(2)])
      .when(progress(1))
      .thenNothing();
    model
      .given([queued, started, progressed(1), progressed(2)])
      .when(progress(3))
      .then([progressed(3)]);
    model
      .given([queued, started, trained(0.2, 0.1)])
      .when(complete(0.2, 0.1))
      .thenNothing();
    model.given([queued, started, failed]).when(fail).thenNothing();
  });

  test('progress and completion need a training that started', () => {
    model.given([queued]).when(progress(1)).thenRejects('model_not_training');
    model.given([queued]).when(complete(0.2, 0.1)).thenRejects('model_not_training');
  });

  test('figures must be numbers: NaN or a negative CER is a programming error', () => {
    assert.throws(() => decideModel(foldModel([queued, started]), complete(Number.NaN, 0.1)), /cerBefore NaN/);
    assert.throws(() => decideModel(foldModel([queued, started]), progress(1, -0.1)), /validationCer -0.1/);
    assert.throws(() => decideModel(foldModel([queued, started]), { ...progress(1), epoch: 1.5 } as ModelCommand), /not a count/);
  });

  test('a queued or training model fails with its reason', () => {
    model.given([queued]).when(fail).then([failed]);
    const state = model.given([queued, started]).when(fail).then([failed]);
    assert.equal(state.status, 'failed');
    assert.equal(state.errorMessage, 'the trainer exited with status 1');
  });
});

describe('cancel and retire', () => {
  test('a queued or training model is cancelled (saying from which state); a second cancel changes nothing', () => {
    model
      .given([queued])
      .when(cancel)
      .then([{ type: 'ModelTrainingCancelled', data: { cancelledAt: iso(30), previousState: 'queued' } }]);
    const cancelled: ModelEvent = { type: 'ModelTrainingCancelled', data: { cancelledAt: iso(30), previousState: 'training' } };
    model
      .given([queued, started, progressed(1)])
      .when(cancel)
      .then([cancelled]);
    model.given([queued, started, cancelled]).when(cancel).thenNothing();
  });

  test("a cancelled training takes none of the trainer's commands", () => {
    const cancelled: ModelEvent = { type: 'ModelTrainingCancelled', data: { cancelledAt: iso(30), previousState: 'training' } };
    for (const command of [start, progress(2), complete(0.2, 0.1), fail, retire])
      model.given([queued, started, cancelled]).when(command).thenRejects('model_cancelled');
  });

  test('a ready model is retired once; a retired model takes no trainer command', () => {
    const state = model
      .given([queued, started, trained(0.2, 0.1)])
      .when(retire)
      .then([retired]);
    assert.equal(state.status, 'retired');
    model
      .given([queued, started, trained(0.2, 0.1), retired])
      .when(retire)
      .thenNothing();
    for (const command of [start, progress(5), fail, cancel])
      model
        .given([queued, started, trained(0.2, 0.1), retired])
        .when(command)
        .thenRejects('model_already_finished');
  });

  test('only a ready model is retired; an ended training cannot be cancelled', () => {
    model.given([queued]).when(retire).thenRejects('model_not_trained');
    model.given([queued, started]).when(retire).thenRejects('model_not_trained');
    model.given([queued, started, failed]).when(retire).thenRejects('model_already_finished');
    model.given([queued, started, failed]).when(cancel).thenRejects('model_already_finished');
    model
      .given([queued, started, trained(0.2, 0.1)])
      .when(cancel)
      .thenRejects('model_already_finished');
    model
      .given([queued, started, trained(0.2, 0.1)])
      .when(fail)
      .thenRejects('model_already_finished');
  });
});
