// Training for real (docs/models.md): a service with the trainer role, the real PyTorch trainer
// (train/finetune.py, a tiny plan of a few dozen real lines) and the real page pipeline. Ground
// truth in over the API; the model ends `ready` with its figures measured by the service on the
// held-out lines; its files are in the blob store; a job that names it reads with it (its archive
// names the model); another account cannot see or use it. The trainer killed outright
// mid-training is taken up again from its checkpoint in the blob store and the model ends `ready`
// once; a DELETE during training stops the trainer within seconds, and nothing is billed for it.
// Skipped, saying why, where no Python with PyTorch, ONNX, NumPy and Pillow is found.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { checkpointPrefix } from '../../src/pipeline/training/model-files.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { trainedModelPrefix } from '../../src/blobs/blob-keys.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { trainerAvailability } from '../../src/runtime/trainer-probe.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { createTestDatabase } from '../support/database.ts';
import { testConfig } from '../support/engine.ts';
import { type Auth, createCredentials, FIXTURES, makeZip, startApiServer } from '../support/http-client.ts';
import { waitUntil } from '../support/wait.ts';

const probe = await trainerAvailability({ ...(await testConfig('postgres://unused')).training, mode: 'auto' })();
const skip = probe.available ? false : `no trainer here: ${probe.reason}`;

// A small plan: 2 epochs over ~20 lines, a checkpoint every few seconds, cancellation checked often.
// TRAINING_QUANTIZE is on, with a rise the 8-bit model always passes: the model is stored and read in 8 bits.
const TUNING = {
  trainerArgs: [
    '--line-passes',
    '40',
    '--min-epochs',
    '2',
    '--max-epochs',
    '2',
    '--patience',
    '0',
    '--batch-lines',
    '8',
    '--max-cer-rise',
    '100',
  ],
  checkpointMinutes: 0.02,
  watchIntervalMs: 300,
};

describe('training an account model with the real trainer', { skip }, async () => {
  const databaseUrl = await createTestDatabase();
  const config = await testConfig(databaseUrl, { TRAINER: 'auto', TRAINER_NICE: '0', TRAINING_QUANTIZE: '1' });
  const pipelines = await defaultPipelines(config, createLogger('silent'));
  const server = await startApiServer(databaseUrl, {
    env: { TRAINER: 'auto', TRAINER_NICE: '0', TRAINING_QUANTIZE: '1', DATA_DIR: config.dataDir },
    pipelines,
    trainer: { trainer: 'required', trainerTuning: TUNING },
  });
  after(async () => {
    await server.close();
    await pipelines.close();
    await rm(config.dataDir, { recursive: true, force: true });
  });
  const { client, runtime } = server;
  const owner: Auth = { key: (await createCredentials(runtime, 'trainer-owner')).key };
  const stranger: Auth = { key: (await createCredentials(runtime, 'trainer-stranger')).key };

  const fixture = (file: string) => readFile(path.join(FIXTURES, file));
  // eScriptorium's ALTO export of one page of Zola's hand (25 lines): 20 to train on, 5 held out.
  const groundTruth = await makeZip([
    { name: 'f207.jpeg', data: await fixture('export/cremma19_zola_f207.jpg') },
    { name: 'f207.xml', data: await fixture('export/cremma19_zola_f207.xml') },
  ]);

  async function train(label: string): Promise<string> {
    const form = new FormData();
    form.append('label', label);
    form.append('training_zip', new Blob([new Uint8Array(groundTruth)], { type: 'application/zip' }), 'truth.zip');
    const response = await client.request('POST', '/v1/models', { auth: owner, body: form });
    assert.equal(response.status, 202, JSON.stringify(response.body));
    return response.body.model_id;
  }

  const status = async (modelId: string, auth: Auth = owner) => (await client.request('GET', `/v1/models/${modelId}`, { auth })).body;

  /** The noise margin the trainer measured (ModelTrained.cerMargin). */
  async function cerMarginOf(modelId: string): Promise<number> {
    const trained = (await readStream(runtime.db.pool, `model-${modelId}`)).find(
      (event: { type: string }) => event.type === 'ModelTrained',
    );
    return Number((trained?.data as { cerMargin?: number } | undefined)?.cerMargin);
  }

  async function eventTypes(modelId: string): Promise<string[]> {
    return (await readStream(runtime.db.pool, `model-${modelId}`)).map((event: { type: string }) => event.type);
  }

  test('a training ends ready with figures the service measured, and a job reads with the model', { timeout: 600_000 }, async () => {
    const modelId = await train('Zola');
    const ready = await waitUntil(
      'the model to be ready',
      async () => {
        const body = await status(modelId);
        assert.notEqual(body.state, 'failed', body.error_message);
        return body.state === 'ready' ? body : null;
      },
      { timeoutMs: 480_000, intervalMs: 1000 },
    );
    assert.equal(ready.figures.lines_train, 20);
    assert.equal(ready.figures.lines_validation, 5);
    for (const figure of ['cer_before', 'cer_after', 'wer_before', 'wer_after'])
      assert.ok(ready.figures[figure] >= 0 && ready.figures[figure] <= 2, `${figure} ${ready.figures[figure]}`);
    // The base reads Zola's hand imperfectly: the held-out lines were really read, not assumed.
    assert.ok(ready.figures.cer_before > 0.01, `cer_before ${ready.figures.cer_before}`);
    const margin = await cerMarginOf(modelId);
    assert.ok(margin >= 0);
    assert.equal(ready.figures.not_better, !(ready.figures.cer_after < ready.figures.cer_before - margin));
    assert.ok(ready.figures.training_minutes > 0);
    assert.deepEqual(
      ready.progress.history.map((point: { epoch: number }) => point.epoch),
      [1, 2],
    );
    const stored = await runtime.blobs.list(trainedModelPrefix(modelId));
    for (const file of ['manifest.json', 'rec.onnx', 'rec.int8.onnx', 'charset.txt'])
      assert.ok(stored.includes(file), `stored model lacks ${file}`);
    assert.deepEqual(await runtime.blobs.list(checkpointPrefix(modelId)), [], 'checkpoints are removed once the model is stored');
    assert.deepEqual(await eventTypes(modelId), [
      'ModelTrainingQueued',
      'ModelTrainingStarted',
      'ModelTrainingProgressed',
      'ModelTrainingProgressed',
      'ModelTrained',
    ]);

    // Another account neither sees the model nor reads with it.
    assert.equal((await client.request('GET', `/v1/models/${modelId}`, { auth: stranger })).status, 404);
    const page = await makeZip([{ name: 'f207.jpeg', data: await fixture('export/cremma19_zola_f207.jpg') }]);
    const submit = (auth: Auth) => {
      const form = new FormData();
      form.append('model', modelId);
      form.append('pipeline_steps', 'layout,recognition,export');
      form.append('pdf_format', 'none');
      form.append('scan_zip', new Blob([new Uint8Array(page)], { type: 'application/zip' }), 'scan.zip');
      return client.request('POST', '/v1/process-scan', { auth, body: form });
    };
    const refused = await submit(stranger);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'invalid_model');

    const submitted = await submit(owner);
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const job = await waitUntil(
      'the job to be done',
      async () => {
        const body = (await client.request('GET', `/v1/process-scan/${submitted.body.job_id}`, { auth: owner })).body;
        assert.notEqual(body.state, 'failed', body.error_message);
        return body.state === 'done' ? body : null;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const archive = await client.request('GET', job.result_url, { auth: owner });
    assert.equal(archive.status, 200);
    const checked = await checkResultArchive(archive.raw);
    assert.equal(checked.manifest.options.model, modelId);
    const recognizers = checked.manifest.models.filter((model) => model.role === 'recognition').map((model) => model.name);
    assert.ok(
      recognizers.some((name) => name.startsWith(`${modelId} `)),
      `the archive names the model it read with: ${recognizers}`,
    );
    assert.ok(
      recognizers.some((name) => name === `${modelId} (rec.int8.onnx)`),
      `the model was read in 8 bits (TRAINING_QUANTIZE): ${recognizers}`,
    );
    assert.match(String(checked.files.get(checked.manifest.pages[0].files.page)), new RegExp(modelId));
    assert.ok(checked.pages[0].text.length > 100, 'the page was read');
  });

  test('a trainer killed mid-training is taken up again from its checkpoint and the model ends ready once', {
    timeout: 600_000,
  }, async () => {
    const modelId = await train('Zola, killed');
    // The trainer has stored a checkpoint (after its first epoch at the latest): kill it outright.
    await waitUntil('a stored checkpoint', async () => (await runtime.blobs.list(checkpointPrefix(modelId))).includes('last.pt'), {
      timeoutMs: 300_000,
      intervalMs: 250,
    });
    execFileSync('pkill', ['-KILL', '-f', `finetune.py.*${modelId}`]);
    const ready = await waitUntil(
      'the model to be ready after the kill',
      async () => {
        const body = await status(modelId);
        assert.notEqual(body.state, 'failed', body.error_message);
        return body.state === 'ready' ? body : null;
      },
      { timeoutMs: 480_000, intervalMs: 1000 },
    );
    assert.deepEqual(
      ready.progress.history.map((point: { epoch: number }) => point.epoch),
      [1, 2],
    );
    const types = await eventTypes(modelId);
    assert.equal(types.filter((type) => type === 'ModelTrained').length, 1);
    assert.equal(types.filter((type) => type === 'ModelTrainingStarted').length, 1);
  });

  test('a DELETE during training stops the trainer within seconds and bills nothing', { timeout: 600_000 }, async () => {
    const modelId = await train('Zola, cancelled');
    await waitUntil('training', async () => (await status(modelId)).state === 'training', { timeoutMs: 120_000, intervalMs: 200 });
    // The trainer is running (it has cut the lines and started).
    await waitUntil('the trainer process', async () => trainerRunning(modelId), { timeoutMs: 120_000, intervalMs: 200 });
    const cancelledAt = Date.now();
    const deleted = await client.request('DELETE', `/v1/models/${modelId}`, { auth: owner });
    assert.equal(deleted.status, 200);
    assert.equal(deleted.body.state, 'cancelled');
    await waitUntil('the trainer to stop', async () => !trainerRunning(modelId), { timeoutMs: 60_000, intervalMs: 200 });
    const stoppedWithin = Date.now() - cancelledAt;
    assert.ok(stoppedWithin < 60_000, `stopped after ${stoppedWithin} ms`);
    assert.equal((await status(modelId)).state, 'cancelled');
    const usage = await client.request('GET', '/v1/usage', { auth: owner });
    assert.equal(usage.status, 200);
    assert.doesNotMatch(JSON.stringify(usage.body), new RegExp(modelId));
    await waitUntil('its checkpoints removed', async () => (await runtime.blobs.list(checkpointPrefix(modelId))).length === 0, {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
  });

  test('a model trained on nonsense is kept but marked not_better, and says so', { timeout: 600_000 }, async () => {
    // The same page with each line's transcription written backwards: no reading of the image can match it.
    const backwards = (await fixture('export/cremma19_zola_f207.xml'))
      .toString('utf8')
      .replace(/CONTENT="([^"]*)"/g, (_match, text: string) => `CONTENT="${escapeXml([...unescapeXml(text)].reverse().join(''))}"`);
    const nonsense = await makeZip([
      { name: 'f207.jpeg', data: await fixture('export/cremma19_zola_f207.jpg') },
      { name: 'f207.xml', data: Buffer.from(backwards) },
    ]);
    const form = new FormData();
    form.append('training_zip', new Blob([new Uint8Array(nonsense)], { type: 'application/zip' }), 'nonsense.zip');
    const queued = await client.request('POST', '/v1/models', { auth: owner, body: form });
    assert.equal(queued.status, 202, JSON.stringify(queued.body));
    const modelId = queued.body.model_id;
    const ready = await waitUntil(
      'the nonsense model to be ready',
      async () => {
        const body = await status(modelId);
        assert.notEqual(body.state, 'failed', body.error_message);
        return body.state === 'ready' ? body : null;
      },
      { timeoutMs: 480_000, intervalMs: 1000 },
    );
    // Whatever it learned of text that does not match the images, it reads its held-out lines no
    // better than its base by more than chance on 5 lines gives.
    const margin = await cerMarginOf(modelId);
    assert.equal(ready.figures.not_better, true, JSON.stringify({ ...ready.figures, margin }));
    assert.ok(ready.figures.cer_after >= ready.figures.cer_before - margin, JSON.stringify({ ...ready.figures, margin }));
    assert.match(ready.warnings.at(-1), /^not better than its base model on the held-out lines/);
  });

  test('the projections verify after all of it', async () => {
    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
  });
});

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescapeXml = (text: string): string =>
  text
    .replace(/&#(\d+);/g, (_match, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&(amp|lt|gt|quot|apos);/g, (_match, name: string) => ENTITIES[name]);
const escapeXml = (text: string): string =>
  text.replace(/[&<>"]/g, (c) => `&${Object.keys(ENTITIES).find((name) => ENTITIES[name] === c)};`);

function trainerRunning(modelId: string): boolean {
  try {
    execFileSync('pgrep', ['-f', `finetune.py.*${modelId}`]);
    return true;
  } catch {
    return false;
  }
}
