// The models API over real HTTP (docs/models.md), every answer checked against the OpenAPI
// document: ground truth in (real ZIPs of a Transkribus and an eScriptorium export), the
// training queued as a pg-boss task, the trainer's commands (run here on the bus, as the trainer
// role will) shown in the model's status, cancel and retire, a job that names a model, another
// account's models invisible, training refused where no trainer can run; projections verify.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { ModelCommand } from '../../domain/model-decide.ts';
import { trainedModelPrefix } from '../../src/blobs/blob-keys.ts';
import { modelTrainingTaskId, QUEUES } from '../../src/queue/queues.ts';
import { TRAINING_INSTRUCTION } from '../../src/runtime/trainer-probe.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { createTestDatabase } from '../support/database.ts';
import { type ApiClient, type Auth, createCredentials, FIXTURES, makeZip, pagesZip, startApiServer } from '../support/http-client.ts';

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl, { env: { TRAINER: 'on' } });
after(() => server.close());
const { client, runtime } = server;
const owner = await createCredentials(runtime, 'model-owner');
const auth: Auth = { key: owner.key };
const stranger: Auth = { key: (await createCredentials(runtime, 'model-stranger')).key };

const fixture = (file: string) => readFile(path.join(FIXTURES, file));
// An eScriptorium ALTO export of one page (25 lines), and a Transkribus PageXML export of two (22 + 12).
const escriptorium = await makeZip([
  { name: 'f207.jpeg', data: await fixture('export/cremma19_zola_f207.jpg') },
  { name: 'f207.xml', data: await fixture('export/cremma19_zola_f207.xml') },
]);
const transkribus = await makeZip([
  { name: 'Hooker/JDH_2_3_6_79_001.jpg', data: await fixture('models/hooker_JDH_2_3_6_79_001.jpg') },
  { name: 'Hooker/JDH_2_16_144_002.jpg', data: await fixture('correction/hooker_JDH_2_16_144_002.jpg') },
  { name: 'Hooker/page/JDH_2_3_6_79_001.xml', data: await fixture('models/hooker_JDH_2_3_6_79_001.xml') },
  { name: 'Hooker/page/JDH_2_16_144_002.xml', data: await fixture('models/hooker_JDH_2_16_144_002.xml') },
  { name: 'Hooker/mets.xml', data: Buffer.from('<mets:mets xmlns:mets="http://www.loc.gov/METS/"/>') },
]);

function train(api: ApiClient, zip: Buffer | null, key: Auth, fields: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (zip) form.append('training_zip', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'truth.zip');
  return api.request('POST', '/v1/models', { auth: key, body: form });
}

/** A queued model of `key`'s account; its id. */
async function queuedModel(key: Auth = auth, fields: Record<string, string> = {}): Promise<string> {
  const response = await train(client, escriptorium, key, fields);
  assert.equal(response.status, 202, JSON.stringify(response.body));
  return response.body.model_id;
}

/** What the trainer role will do: start, report epochs, complete with the measured figures. */
async function trainToReady(modelId: string, cerBefore = 0.2, cerAfter = 0.1): Promise<void> {
  const now = () => new Date();
  const commands: ModelCommand[] = [
    { type: 'StartModelTraining', now: now() },
    { type: 'RecordModelProgress', epoch: 1, trainLoss: 3.5, validationCer: 0.25, now: now() },
    { type: 'RecordModelProgress', epoch: 2, trainLoss: 1.75, validationCer: 0.125, now: now() },
    {
      type: 'CompleteModelTraining',
      cerBefore,
      cerAfter,
      werBefore: 0.4,
      werAfter: 0.3,
      linesTrain: 20,
      linesValidation: 5,
      trainingMinutes: 3.5,
      modelKey: trainedModelPrefix(modelId),
      now: now(),
    },
  ];
  for (const command of commands) await runtime.bus.model(modelId, command, { actor: 'trainer' });
}

async function trainingTask(modelId: string) {
  const [task] = await runtime.boss.findJobs(QUEUES.modelTraining, { id: modelTrainingTaskId(modelId) });
  return task;
}

async function storedModels(): Promise<string[]> {
  return (await runtime.blobs.list('models')).sort();
}

describe('POST /v1/models', () => {
  test('202 with model_id, state queued, label, created_at, status_url, lines_total, pages_total; the training task is queued', async () => {
    const before = Date.now();
    const response = await train(client, escriptorium, auth, { label: '  Zola, manuscrits  ' });
    assert.equal(response.status, 202, JSON.stringify(response.body));
    const body = response.body;
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'label', 'lines_total', 'model_id', 'pages_total', 'state', 'status_url']);
    assert.equal(body.state, 'queued');
    assert.equal(body.label, 'Zola, manuscrits');
    assert.equal(body.lines_total, 25);
    assert.equal(body.pages_total, 1);
    assert.ok(Date.parse(body.created_at) >= before - 5);
    assert.equal(body.status_url, `${server.baseUrl}/v1/models/${body.model_id}`);
    assert.equal(response.headers.get('location'), body.status_url);

    const status = await client.get(body.status_url, auth);
    assert.equal(status.status, 200);
    assert.deepEqual(status.body, {
      model_id: body.model_id,
      label: 'Zola, manuscrits',
      state: 'queued',
      base_model: 'default',
      created_at: body.created_at,
      started_at: null,
      finished_at: null,
      pages_total: 1,
      lines_total: 25,
      lines_skipped: { no_text: 0, no_geometry: 0, outside_image: 0, too_small: 0, unlearnable_characters: 0 },
      progress: null,
      figures: null,
      warnings: [],
      error_message: null,
      status_url: body.status_url,
    });
    const task = await trainingTask(body.model_id);
    assert.equal(task?.state, 'created');
    assert.deepEqual(task?.data, { modelId: body.model_id });
    const events = await client.get(`/v1/models/${body.model_id}/events`, auth);
    assert.deepEqual(
      events.body.events.map((event: { type: string }) => event.type),
      ['ModelTrainingQueued'],
    );
    assert.equal(events.body.events[0].data.groundTruthKey, `models/${body.model_id}/ground-truth/ground-truth.json`);
  });

  test('a Transkribus export: two pages, their lines, the METS file said in the warnings', async () => {
    const response = await train(client, transkribus, auth);
    assert.equal(response.status, 202, JSON.stringify(response.body));
    assert.equal(response.body.pages_total, 2);
    assert.equal(response.body.lines_total, 34);
    assert.equal(response.body.label, null);
    const status = await client.get(response.body.status_url, auth);
    assert.deepEqual(status.body.warnings, ['ignored 1 XML file that is not PageXML or ALTO: "Hooker/mets.xml"']);
  });

  test('refusals with their codes, and nothing of the model stored', async () => {
    const stored = await storedModels();
    const refusals: Array<[Promise<{ status: number; body: any }>, number, string]> = [
      [train(client, null, auth, { label: 'x' }), 400, 'training_zip_missing'],
      [train(client, escriptorium, auth, { label: 'x'.repeat(101) }), 400, 'invalid_label'],
      [train(client, escriptorium, auth, { base_model: 'mine' }), 400, 'invalid_model'],
      [train(client, escriptorium, auth, { base_model: '00000000-0000-4000-8000-000000000000' }), 400, 'invalid_model'],
      [
        train(
          client,
          await makeZip([
            { name: 'JDH_2_16_144_002.jpg', data: await fixture('correction/hooker_JDH_2_16_144_002.jpg') },
            { name: 'page/JDH_2_16_144_002.xml', data: await fixture('models/hooker_JDH_2_16_144_002.xml') },
          ]),
          auth,
        ),
        400,
        'too_few_lines',
      ],
      [train(client, await pagesZip(['1.jpg', '2.jpg']), auth), 400, 'page_without_layout'],
      [train(client, await makeZip([{ name: 'notes.txt', data: Buffer.from('x') }]), auth), 400, 'no_images'],
      [
        client.request('POST', '/v1/models', { auth, body: 'not multipart', headers: { 'Content-Type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      ],
    ];
    for (const [pending, status, code] of refusals) {
      const response = await pending;
      assert.equal(response.status, status, `${code}: ${JSON.stringify(response.body)}`);
      assert.equal(response.body.code, code);
      assert.equal(response.body.retryable, false);
    }
    assert.deepEqual(await storedModels(), stored, 'every refusal left nothing');
  });

  test('base_model: a ready model of the account is taken; a queued one is not ready; another account’s is unknown', async () => {
    const base = await queuedModel();
    const notReady = await train(client, escriptorium, auth, { base_model: base });
    assert.equal(notReady.status, 400);
    assert.equal(notReady.body.code, 'model_not_ready');
    assert.match(notReady.body.detail, /is queued, not ready; use it once it is ready/);
    await trainToReady(base);
    const foreign = await train(client, escriptorium, stranger, { base_model: base });
    assert.equal(foreign.body.code, 'invalid_model');
    const onTop = await train(client, escriptorium, auth, { base_model: base.toUpperCase() });
    assert.equal(onTop.status, 202, JSON.stringify(onTop.body));
    assert.equal((await client.get(onTop.body.status_url, auth)).body.base_model, base);
  });
});

describe('the status through a training, and the list', () => {
  test('training: progress per epoch; ready: the figures; state, times and history in the status', async () => {
    const modelId = await queuedModel();
    await runtime.bus.model(modelId, { type: 'StartModelTraining', now: new Date() });
    const training = (await client.get(`/v1/models/${modelId}`, auth)).body;
    assert.equal(training.state, 'training');
    assert.ok(training.started_at);
    assert.equal(training.progress, null);
    await trainToReady(modelId);
    const ready = (await client.get(`/v1/models/${modelId}`, auth)).body;
    assert.equal(ready.state, 'ready');
    assert.ok(ready.finished_at);
    assert.equal(ready.progress.epoch, 2);
    assert.equal(ready.progress.validation_cer, 0.125);
    assert.deepEqual(
      ready.progress.history.map((point: { epoch: number; validation_cer: number }) => [point.epoch, point.validation_cer]),
      [
        [1, 0.25],
        [2, 0.125],
      ],
    );
    assert.deepEqual(ready.figures, {
      cer_before: 0.2,
      cer_after: 0.1,
      wer_before: 0.4,
      wer_after: 0.3,
      lines_train: 20,
      lines_validation: 5,
      training_minutes: 3.5,
      not_better: false,
    });
    assert.deepEqual(ready.warnings, []);
    // The task is the trainer role's to take; nothing here ran it.
    assert.equal((await trainingTask(modelId))?.state, 'created');
  });

  test('not better than its base: kept, ready, and the status says so', async () => {
    const modelId = await queuedModel();
    await trainToReady(modelId, 0.15, 0.2);
    const body = (await client.get(`/v1/models/${modelId}`, auth)).body;
    assert.equal(body.state, 'ready');
    assert.equal(body.figures.not_better, true);
    assert.match(body.warnings.at(-1), /^not better than its base model on the held-out lines \(CER 15\.0 % before, 20\.0 % after\)/);
  });

  test('a failed training: its reason in error_message', async () => {
    const modelId = await queuedModel();
    await runtime.bus.model(modelId, { type: 'StartModelTraining', now: new Date() });
    await runtime.bus.model(modelId, { type: 'FailModelTraining', reason: 'the trainer ran out of memory', now: new Date() });
    const body = (await client.get(`/v1/models/${modelId}`, auth)).body;
    assert.equal(body.state, 'failed');
    assert.equal(body.error_message, 'the trainer ran out of memory');
  });

  test("GET /v1/models: the account's own, newest first; another account sees none of them", async () => {
    const first = await queuedModel();
    const second = await queuedModel();
    const listed = (await client.get('/v1/models', auth)).body.models.map((model: { model_id: string }) => model.model_id);
    assert.deepEqual(listed.slice(0, 2), [second, first]);
    const theirs = await queuedModel(stranger);
    const strangers = (await client.get('/v1/models', stranger)).body.models.map((model: { model_id: string }) => model.model_id);
    assert.deepEqual(strangers, [theirs]);
  });
});

describe('DELETE /v1/models/{id}', () => {
  test('a queued model is cancelled and its task taken back; again: 200, still cancelled', async () => {
    const modelId = await queuedModel();
    const response = await client.delete(`/v1/models/${modelId}`, auth);
    assert.equal(response.status, 200);
    assert.equal(response.body.state, 'cancelled');
    assert.ok(response.body.finished_at);
    assert.equal((await trainingTask(modelId))?.state, 'cancelled');
    const again = await client.delete(`/v1/models/${modelId}`, auth);
    assert.equal(again.status, 200);
    assert.equal(again.body.state, 'cancelled');
  });

  test('a training model is cancelled; a ready one retired (and no job takes it); a failed one: 409', async () => {
    const training = await queuedModel();
    await runtime.bus.model(training, { type: 'StartModelTraining', now: new Date() });
    assert.equal((await client.delete(`/v1/models/${training}`, auth)).body.state, 'cancelled');

    const ready = await queuedModel();
    await trainToReady(ready);
    const retired = await client.delete(`/v1/models/${ready}`, auth);
    assert.equal(retired.status, 200);
    assert.equal(retired.body.state, 'retired');
    assert.equal((await client.delete(`/v1/models/${ready}`, auth)).body.state, 'retired');
    const job = await client.submit(await pagesZip(['1.jpg']), auth, { model: ready });
    assert.equal(job.status, 400);
    assert.equal(job.body.code, 'model_not_ready');
    assert.match(job.body.detail, /is retired, not ready$/);

    const failed = await queuedModel();
    await runtime.bus.model(failed, { type: 'FailModelTraining', reason: 'no', now: new Date() });
    const refused = await client.delete(`/v1/models/${failed}`, auth);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'model_already_finished');
  });

  test("another account's model, or no model at all: 404 for every route", async () => {
    const modelId = await queuedModel();
    for (const [method, url] of [
      ['GET', `/v1/models/${modelId}`],
      ['DELETE', `/v1/models/${modelId}`],
      ['GET', `/v1/models/${modelId}/events`],
      ['GET', '/v1/models/00000000-0000-4000-8000-000000000000'],
      ['GET', '/v1/models/not-a-uuid'],
    ] as const) {
      const response = await client.request(method, url, { auth: url.includes(modelId) ? stranger : auth });
      assert.equal(response.status, 404, `${method} ${url}`);
      assert.equal(response.body.code, 'model_not_found');
    }
    assert.equal((await client.get(`/v1/models/${modelId}`, auth)).body.state, 'queued', 'untouched by the stranger');
  });
});

describe('POST /v1/process-scan with a model', () => {
  test('a ready model of the account is recorded in JobQueued; default and no model record none', async () => {
    const modelId = await queuedModel();
    await trainToReady(modelId);
    const job = await client.submit(await pagesZip(['1.jpg']), auth, { model: modelId });
    assert.equal(job.status, 202, JSON.stringify(job.body));
    const events = (await client.get(`/v1/process-scan/${job.body.job_id}/events`, auth)).body.events;
    assert.equal(events[0].data.options.model, modelId);
    const plainFields: Array<Record<string, string>> = [{ model: 'default' }, {}];
    for (const fields of plainFields) {
      const plain = await client.submit(await pagesZip(['1.jpg']), auth, fields);
      assert.equal(plain.status, 202);
      const events: Array<{ data: { options: object } }> = (await client.get(`/v1/process-scan/${plain.body.job_id}/events`, auth)).body
        .events;
      const first = events[0];
      assert.equal('model' in first.data.options, false, JSON.stringify(fields));
    }
  });

  test('anything else: 400 invalid_model or model_not_ready, and no job', async () => {
    const queued = await queuedModel();
    const theirs = await queuedModel(stranger);
    await trainToReady(theirs);
    const jobs = async () =>
      Number((await runtime.db.pool.query('select count(*) as n from job_status where account_id = $1', [owner.accountId])).rows[0].n);
    const before = await jobs();
    for (const [model, code] of [
      ['best-one', 'invalid_model'],
      ['00000000-0000-4000-8000-000000000000', 'invalid_model'],
      [theirs, 'invalid_model'],
      [queued, 'model_not_ready'],
    ] as const) {
      const response = await client.submit(await pagesZip(['1.jpg']), auth, { model });
      assert.equal(response.status, 400, model);
      assert.equal(response.body.code, code, model);
    }
    assert.equal(await jobs(), before);
  });
});

describe('where no trainer can run', () => {
  test('503 training_unavailable with the one-line instruction, before the upload is read (TRAINER=auto, no such Python)', async () => {
    const other = await startApiServer(databaseUrl, { env: { TRAINER: 'auto', TRAINER_PYTHON: '/nonexistent/python3' } });
    try {
      const key: Auth = { key: (await createCredentials(other.runtime, 'no-trainer')).key };
      const response = await train(other.client, escriptorium, key);
      assert.equal(response.status, 503);
      assert.equal(response.body.code, 'training_unavailable');
      assert.equal(response.body.retryable, false);
      assert.equal(response.body.detail, TRAINING_INSTRUCTION);
      // Reading models still works.
      assert.equal((await other.client.get('/v1/models', key)).status, 200);
    } finally {
      await other.close();
    }
  });
});

test('projections verify after all of it', async () => {
  assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
});
