// `hwr models` and `hwr submit --model` as real processes against a real service (docs/models.md,
// "From the command line"): ground truth zipped from folders (a Transkribus export's layout files
// where they lie) or sent as a ZIP, the list, the status, retire (a cancel or a retirement), a job
// that names a ready model and one that names no model of the account (exit 5), the usage of trained
// lines, and `--wait` to the end of a training. No trainer runs here: the trainer's commands
// (start, epochs, completion with its figures, failure) are sent on the command bus as the trainer
// role sends them, as test/e2e/api-models.test.ts does.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { ModelCommand } from '../../domain/model-decide.ts';
import { trainedModelPrefix } from '../../src/blobs/blob-keys.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, FIXTURES, makeZip, startApiServer, ZIP_FIXTURES } from '../support/http-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const root = path.resolve(import.meta.dirname, '../..');
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-cli-models-'));
const children = new Set<ChildProcess>();
const databaseUrl = await createTestDatabase();
const dataDir = path.join(work, 'data');
// TRAINER=on: training is offered (a trainer would run elsewhere); none runs, so models stay queued.
const service = await startApiServer(databaseUrl, { pipelines: scriptedPipelines(), env: { TRAINER: 'on', DATA_DIR: dataDir } });
const { runtime } = service;
const owner = await createCredentials(runtime, 'cli-models');
const stranger = await createCredentials(runtime, 'cli-models-stranger');

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await service.close();
  await rm(work, { recursive: true, force: true });
});

// A Transkribus export as it unpacks: the images of a document, their PageXML under page/, its mets.xml.
const transkribus = path.join(work, 'Hooker');
await mkdir(path.join(transkribus, 'page'), { recursive: true });
await copyFile(path.join(FIXTURES, 'models/hooker_JDH_2_3_6_79_001.jpg'), path.join(transkribus, 'JDH_2_3_6_79_001.jpg'));
await copyFile(path.join(FIXTURES, 'correction/hooker_JDH_2_16_144_002.jpg'), path.join(transkribus, 'JDH_2_16_144_002.jpg'));
await copyFile(path.join(FIXTURES, 'models/hooker_JDH_2_3_6_79_001.xml'), path.join(transkribus, 'page/JDH_2_3_6_79_001.xml'));
await copyFile(path.join(FIXTURES, 'models/hooker_JDH_2_16_144_002.xml'), path.join(transkribus, 'page/JDH_2_16_144_002.xml'));
await writeFile(path.join(transkribus, 'mets.xml'), '<mets:mets xmlns:mets="http://www.loc.gov/METS/"/>');
// An eScriptorium export of one page (25 lines) as a ZIP, sent as it is.
const escriptoriumZip = path.join(work, 'zola.zip');
await writeFile(
  escriptoriumZip,
  await makeZip([
    { name: 'f207.jpeg', data: await readFile(path.join(FIXTURES, 'export/cremma19_zola_f207.jpg')) },
    { name: 'f207.xml', data: await readFile(path.join(FIXTURES, 'export/cremma19_zola_f207.xml')) },
  ]),
);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, HWR_URL: service.baseUrl, HWR_API_KEY: owner.key, ...extra };
}

function start(args: string[], extra: Record<string, string> = {}): { done: Promise<Run>; stdout: () => string } {
  const child = spawn(process.execPath, [path.join(root, 'bin/hwr.js'), ...args], { cwd: work, env: env(extra) });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
  return { done, stdout: () => stdout };
}

const hwr = (args: string[], extra: Record<string, string> = {}): Promise<Run> => start(args, extra).done;

async function ok(args: string[], extra: Record<string, string> = {}): Promise<string> {
  const run = await hwr(args, extra);
  assert.equal(run.code, 0, `hwr ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

const jsonLines = (text: string): any[] =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

async function until(what: string, check: () => boolean, output: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const trainer = { actor: 'trainer' };

/** The trainer's commands up to a ready model: started, two epochs, completed with these figures. */
async function trainToReady(modelId: string, linesTrain = 20): Promise<void> {
  const commands: ModelCommand[] = [
    { type: 'StartModelTraining', now: new Date() },
    { type: 'RecordModelProgress', epoch: 1, trainLoss: 3.5, validationCer: 0.25, now: new Date() },
    { type: 'RecordModelProgress', epoch: 2, trainLoss: 1.75, validationCer: 0.125, now: new Date() },
    completion(modelId, linesTrain),
  ];
  for (const command of commands) await runtime.bus.model(modelId, command, trainer);
}

function completion(modelId: string, linesTrain = 20): ModelCommand {
  return {
    type: 'CompleteModelTraining',
    cerBefore: 0.2,
    cerAfter: 0.1,
    werBefore: 0.4,
    werAfter: 0.3,
    linesTrain,
    linesValidation: 5,
    trainingMinutes: 3.5,
    modelKey: trainedModelPrefix(modelId),
    now: new Date(),
  };
}

async function apiModel(modelId: string, key = owner.key) {
  return service.client.get(`/v1/models/${modelId}`, { key });
}

/** A queued model from the ZIP; its id. */
async function queuedModel(label?: string): Promise<string> {
  const [submission] = jsonLines(await ok(['models', 'train', escriptoriumZip, ...(label ? ['--label', label] : [])]));
  return submission.model_id;
}

/**
 * `hwr ARGS` under a pseudo-terminal (`script`), asynchronously: the service it talks to runs in
 * this process, so a synchronous wait would leave the command's requests unanswered.
 */
function underTerminal(args: string[]): { code: Promise<number | null>; output: () => string } {
  const command = [process.execPath, path.join(root, 'bin/hwr.js'), ...args].map((part) => `'${part}'`).join(' ');
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { cwd: work, env: env({ TERM: 'xterm' }) });
  children.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  const code = new Promise<number | null>((resolve) =>
    child.on('close', (exit) => {
      children.delete(child);
      resolve(exit);
    }),
  );
  return { code, output: () => output };
}

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('hwr models', () => {
  test('train FOLDER: a Transkribus export zipped with its page/ files; prints the submission (JSON); the model is queued', async () => {
    const run = await hwr(['models', 'train', transkribus, '--label', 'Hooker letters']);
    assert.equal(run.code, 0, run.stderr);
    const [submission, ...rest] = jsonLines(run.stdout);
    assert.deepEqual(rest, [], 'one JSON line');
    assert.deepEqual(Object.keys(submission).sort(), [
      'created_at',
      'label',
      'lines_total',
      'model_id',
      'pages_total',
      'state',
      'status_url',
    ]);
    assert.equal(submission.state, 'queued');
    assert.equal(submission.label, 'Hooker letters');
    assert.equal(submission.pages_total, 2, 'each image paired with its layout under page/');
    assert.equal(submission.lines_total, 34);
    const status = await apiModel(submission.model_id);
    assert.equal(status.status, 200);
    assert.equal(status.body.state, 'queued');
    // The service saw the mets.xml too, and says it ignored it.
    assert.ok(
      status.body.warnings.some((warning: string) => warning.includes('mets.xml')),
      JSON.stringify(status.body.warnings),
    );
  });

  test('train ZIP: sent as it is; --base names the base model', async () => {
    const [submission] = jsonLines(await ok(['models', 'train', escriptoriumZip, '--base', 'default']));
    assert.equal(submission.pages_total, 1);
    assert.equal(submission.lines_total, 25);
    assert.equal((await apiModel(submission.model_id)).body.base_model, 'default');
  });

  test('train refusals: a base model that is not ready (exit 5, the code said), no PATH and unknown options (exit 2)', async () => {
    const queued = await queuedModel();
    const notReady = await hwr(['models', 'train', escriptoriumZip, '--base', queued]);
    assert.equal(notReady.code, 5, notReady.stderr);
    assert.match(notReady.stderr, /^hwr models: refused: 400 model_not_ready: /);
    assert.equal(notReady.stdout, '');
    const noPath = await hwr(['models', 'train']);
    assert.equal(noPath.code, 2);
    assert.match(noPath.stderr, /no PATH/);
    const unknown = await hwr(['models', 'train', escriptoriumZip, '--tier', 'best']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown option --tier\nusage: hwr models train/);
    for (const args of [
      ['models'],
      ['models', 'frobnicate'],
      ['models', 'status'],
      ['models', 'retire', 'a', 'b'],
      ['models', 'list', 'x'],
    ]) {
      const run = await hwr(args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /usage: hwr models train/);
    }
  });

  test('list: one JSON line per model, newest first; status: the model as the API answers it; an unknown model exits 5', async () => {
    const older = await queuedModel('older');
    const newer = await queuedModel('newer');
    const listed = jsonLines(await ok(['models', 'list']));
    const ids = listed.map((model) => model.model_id);
    assert.ok(ids.indexOf(newer) < ids.indexOf(older) && ids.indexOf(newer) >= 0, 'newest first');
    assert.deepEqual(listed[ids.indexOf(newer)], (await apiModel(newer)).body);
    assert.deepEqual(jsonLines(await ok(['models', 'list', '--json'])), listed);

    assert.deepEqual(jsonLines(await ok(['models', 'status', newer])), [(await apiModel(newer)).body]);
    const unknown = await hwr(['models', 'status', randomUUID()]);
    assert.equal(unknown.code, 5);
    assert.match(unknown.stderr, /refused: 404 model_not_found/);
    // Another account's model does not exist for this key.
    const foreign = await hwr(['models', 'status', newer], { HWR_API_KEY: stranger.key });
    assert.equal(foreign.code, 5);
    assert.match(foreign.stderr, /refused: 404 model_not_found/);
  });

  test('retire: cancels a queued model, retires a ready one (it takes no new job), a failed one is refused (exit 5)', async () => {
    const queued = await queuedModel();
    const [cancelled] = jsonLines(await ok(['models', 'retire', queued]));
    assert.equal(cancelled.state, 'cancelled');
    assert.equal((await apiModel(queued)).body.state, 'cancelled');

    const ready = await queuedModel();
    await trainToReady(ready);
    const [retired] = jsonLines(await ok(['models', 'retire', ready]));
    assert.equal(retired.state, 'retired');
    assert.deepEqual(retired.figures.cer_after, 0.1, 'the figures stay');
    const pages = path.join(work, 'retired-pages');
    await mkdir(pages);
    await copyFile(path.join(ZIP_FIXTURES, 'images/line-1.jpg'), path.join(pages, '1.jpg'));
    const refused = await hwr(['submit', pages, '--model', ready]);
    assert.equal(refused.code, 5);
    assert.match(refused.stderr, /refused: 400 model_not_ready/);

    const failed = await queuedModel();
    await runtime.bus.model(failed, { type: 'StartModelTraining', now: new Date() }, trainer);
    await runtime.bus.model(failed, { type: 'FailModelTraining', reason: 'too few lines after the split', now: new Date() }, trainer);
    const again = await hwr(['models', 'retire', failed]);
    assert.equal(again.code, 5);
    assert.match(again.stderr, /refused: 409 model_already_finished/);
  });

  test('submit --model: a ready model is recorded in the job (JobQueued options.model); an unknown one is refused (exit 5)', async () => {
    const modelId = await queuedModel('for jobs');
    await trainToReady(modelId);
    const pages = path.join(work, 'model-pages');
    await mkdir(pages);
    await copyFile(path.join(ZIP_FIXTURES, 'images/line-1.jpg'), path.join(pages, '1.jpg'));
    const [submission] = jsonLines(await ok(['submit', pages, '--model', modelId]));
    assert.equal(submission.state, 'queued');
    const queuedEvent = jsonLines(await ok(['events', submission.job_id])).find((event) => event.type === 'JobQueued');
    assert.equal(queuedEvent.data.options.model, modelId);

    const unknown = await hwr(['submit', pages, '--model', randomUUID()]);
    assert.equal(unknown.code, 5);
    assert.match(unknown.stderr, /^hwr submit: refused: 400 invalid_model: /);
    assert.equal(unknown.stdout, '');
    // Another account's ready model is no model of this account.
    const foreign = await hwr(['submit', pages, '--model', modelId], { HWR_API_KEY: stranger.key });
    assert.equal(foreign.code, 5);
    assert.match(foreign.stderr, /refused: 400 invalid_model/);
  });

  test('train --wait, not on a terminal: JSON lines (zipped, submitted, progress with epoch and validation CER, ready with the figures), exit 0', async () => {
    const running = start(['models', 'train', transkribus, '--wait']);
    const lines = () => jsonLines(running.stdout());
    await until('the submission', () => lines().some((line) => line.event === 'submitted'), running.stdout);
    const modelId = lines().find((line) => line.event === 'submitted').model_id;
    // the CLI's first poll sees the model queued; training starts only after it (on a loaded machine it came first)
    await until('the queued model shown', () => lines().some((line) => line.event === 'progress'), running.stdout);
    await runtime.bus.model(modelId, { type: 'StartModelTraining', now: new Date() }, trainer);
    await runtime.bus.model(
      modelId,
      { type: 'RecordModelProgress', epoch: 1, trainLoss: 3.5, validationCer: 0.25, now: new Date() },
      trainer,
    );
    await until('epoch 1 shown', () => lines().some((line) => line.event === 'progress' && line.epoch === 1), running.stdout);
    await runtime.bus.model(modelId, completion(modelId, 27), trainer);
    const run = await running.done;
    assert.equal(run.code, 0, run.stderr);
    const output = jsonLines(run.stdout);
    assert.deepEqual(output[0], { event: 'zipped', images: 2, layouts: 3, bytes: output[0].bytes });
    assert.equal(output[1].event, 'submitted');
    const progress = output.filter((line) => line.event === 'progress');
    assert.equal(progress[0].state, 'queued');
    const epoch = progress.find((line) => line.epoch === 1);
    assert.deepEqual(
      { ...epoch, elapsed_seconds: 0 },
      { event: 'progress', model_id: modelId, state: 'training', epoch: 1, train_loss: 3.5, validation_cer: 0.25, elapsed_seconds: 0 },
    );
    assert.equal(progress.at(-1).state, 'ready');
    assert.deepEqual(output.at(-1), {
      event: 'ready',
      model_id: modelId,
      figures: {
        cer_before: 0.2,
        cer_after: 0.1,
        wer_before: 0.4,
        wer_after: 0.3,
        lines_train: 27,
        lines_validation: 5,
        training_minutes: 3.5,
        not_better: false,
      },
    });
  });

  test('train --wait ends 1 when the training fails and 3 when it is cancelled (by `hwr models retire`)', async () => {
    const failing = start(['models', 'train', escriptoriumZip, '--wait']);
    await until('the submission', () => failing.stdout().includes('"submitted"'), failing.stdout);
    const failedId = jsonLines(failing.stdout()).find((line) => line.event === 'submitted').model_id;
    await runtime.bus.model(failedId, { type: 'StartModelTraining', now: new Date() }, trainer);
    await runtime.bus.model(failedId, { type: 'FailModelTraining', reason: 'the trainer ran out of attempts', now: new Date() }, trainer);
    const failed = await failing.done;
    assert.equal(failed.code, 1, failed.stderr);
    assert.deepEqual(jsonLines(failed.stdout).at(-1), {
      event: 'failed',
      model_id: failedId,
      error_message: 'the trainer ran out of attempts',
    });

    const cancelling = start(['models', 'train', escriptoriumZip, '--wait']);
    await until('the submission', () => cancelling.stdout().includes('"submitted"'), cancelling.stdout);
    const cancelledId = jsonLines(cancelling.stdout()).find((line) => line.event === 'submitted').model_id;
    assert.equal(jsonLines(await ok(['models', 'retire', cancelledId]))[0].state, 'cancelled');
    const cancelled = await cancelling.done;
    assert.equal(cancelled.code, 3, cancelled.stderr);
    assert.deepEqual(jsonLines(cancelled.stdout).at(-1), { event: 'cancelled', model_id: cancelledId });
  });

  test('on a terminal (script): train --wait draws a line with the epoch and validation CER, ends with CER before → after; list is a table', {
    skip: hasScript() ? false : 'no `script` (util-linux) on this machine',
  }, async () => {
    const running = underTerminal(['models', 'train', escriptoriumZip, '--label', 'tty', '--wait']);
    await until(
      'the queued line',
      () => /model [0-9a-f-]{36}: 25 lines of 1 page queued for training at http/.test(running.output()),
      running.output,
    );
    const modelId = /model ([0-9a-f-]{36}): 25 lines/.exec(running.output())![1];
    await runtime.bus.model(modelId, { type: 'StartModelTraining', now: new Date() }, trainer);
    await runtime.bus.model(
      modelId,
      { type: 'RecordModelProgress', epoch: 3, trainLoss: 1.2, validationCer: 0.1234, now: new Date() },
      trainer,
    );
    await until(
      'the epoch line',
      () => /training {2}epoch 3 {2}validation CER 12\.3 % {2}25 lines {2}\d+:\d\d/.test(running.output()),
      running.output,
    );
    await runtime.bus.model(modelId, completion(modelId), trainer);
    assert.equal(await running.code, 0, running.output());
    const screen = running.output().replace(/\r\n/g, '\n');
    assert.ok(screen.includes('\r\x1b[2K'), 'the line is redrawn in place');
    assert.match(screen, /ready: CER 20\.0 % → 10\.0 %, WER 40\.0 % → 30\.0 % on 5 held-out lines \(20 lines trained in 3\.5 min\)/);
    assert.match(screen, new RegExp(`hwr submit PATH --model ${modelId}`));
    assert.ok(!screen.includes('{"event"'), 'no JSON lines on a terminal');

    const list = underTerminal(['models', 'list']);
    assert.equal(await list.code, 0, list.output());
    const table = list.output().replace(/\r\n/g, '\n').split('\n');
    assert.match(table[0], /^ID +LABEL +STATE +CER BEFORE → AFTER +CREATED \(UTC\)$/);
    const row = table.find((line) => line.startsWith(modelId));
    assert.match(row ?? '', /^[0-9a-f-]{36} +tty +ready +20\.0 % → 10\.0 % +\d{4}-\d\d-\d\d \d\d:\d\d$/, list.output());
  });
});

describe('trained lines in usage', () => {
  test('hwr usage and hwr billing count the lines of models trained in the period; failed and cancelled trainings are not billed', async () => {
    const account = await createCredentials(runtime, 'cli-models-billing');
    const as = { HWR_API_KEY: account.key };
    const [before] = jsonLines(await ok(['usage'], as));
    assert.deepEqual([before.models_trained, before.lines_trained], [0, 0]);
    const train = async () => jsonLines(await ok(['models', 'train', escriptoriumZip], as))[0].model_id as string;
    const ready = await train();
    await trainToReady(ready, 20);
    const retiredLater = await train();
    await trainToReady(retiredLater, 7);
    await ok(['models', 'retire', retiredLater], as);
    const cancelled = await train();
    await runtime.bus.model(cancelled, { type: 'StartModelTraining', now: new Date() }, trainer);
    await ok(['models', 'retire', cancelled], as);
    const failed = await train();
    await runtime.bus.model(failed, { type: 'StartModelTraining', now: new Date() }, trainer);
    await runtime.bus.model(failed, { type: 'FailModelTraining', reason: 'lost', now: new Date() }, trainer);
    await train(); // still queued: not billed

    const [usage] = jsonLines(await ok(['usage'], as));
    assert.deepEqual(
      { jobs: usage.jobs, pages: usage.pages, models_trained: usage.models_trained, lines_trained: usage.lines_trained },
      { jobs: 0, pages: 0, models_trained: 2, lines_trained: 27 },
    );
    const tomorrow = new Date(Date.now() + 24 * 3600 * 1000).toISOString().slice(0, 10);
    const [later] = jsonLines(await ok(['usage', '--from', tomorrow], as));
    assert.deepEqual([later.models_trained, later.lines_trained], [0, 0]);

    // The operator's report: the account has a line though it has no done job.
    const [line, ...others] = jsonLines(
      await ok(['billing', '--account', 'cli-models-billing'], { DATABASE_URL: databaseUrl, DATA_DIR: dataDir }),
    );
    assert.deepEqual(others, []);
    assert.deepEqual(line, {
      account: 'cli-models-billing',
      account_id: account.accountId,
      jobs: 0,
      pages: 0,
      corrected_pages: 0,
      tiers: {},
      models_trained: 2,
      lines_trained: 27,
    });
  });
});

test('hwr --help lists the models commands; hwr models --help prints their usage', async () => {
  const help = await hwr(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stderr, /hwr models train PATH\.\.\. \[--label L\] \[--base ID\] \[--wait\] \| models list/);
  assert.match(help.stderr, /hwr submit PATH\.\.\. \[--model ID\]/);
  const models = await hwr(['models', '--help']);
  assert.equal(models.code, 0);
  assert.match(models.stdout, /^usage: hwr models train PATH\.\.\. \[--label L\] \[--base ID\] \[--wait\]\n {7}hwr models list/);
});
