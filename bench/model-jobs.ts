// `npm run bench:model-jobs`: what a trained model costs the jobs around it, on a service started
// as a user starts it (`hwr serve`, role `all`: workers and the trainer in one process tree, the
// trainer niced, TRAINER_NICE), over HTTP:
//   1. a job of the handwritten fixture pages with the default model, warm (a first job loads the models);
//   2. the same job while a model trains on the same machine (ground truth: the fixture ZIPs of the
//      models API tests, an eScriptorium and a Transkribus export, 59 lines);
//   3. once the model is ready, the same job naming it: the first (its recognizer fetched and loaded)
//      and a second (loaded); and the default model again, after it, on the same warm service.
// Prints each job's seconds and the ratios: (2) against (1) is what a training costs the jobs
// beside it; (3) against the default after it is what reading with a trained model costs.
//
//   node bench/model-jobs.ts [--pages N] [--pages-dir ../shared/fixtures/pages] [--training-minutes 10]
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { startService, zipOf } from './lib/service.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../test/fixtures');

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      pages: { type: 'string', default: '4' },
      'pages-dir': { type: 'string', default: DEFAULT_PAGES_DIR },
      'training-minutes': { type: 'string', default: '10' },
    },
  });
  const pages = listFixturePages(values['pages-dir'])
    .filter((page) => page.kind === 'handwritten')
    .slice(0, Number(values.pages));
  const scan = await zipOf(
    await Promise.all(pages.map(async (page) => ({ name: path.basename(page.imagePath), body: await readFile(page.imagePath) }))),
  );
  const fixture = (file: string) => readFile(path.join(FIXTURES, file));
  const groundTruth = await zipOf([
    { name: 'f207.jpeg', body: await fixture('export/cremma19_zola_f207.jpg') },
    { name: 'f207.xml', body: await fixture('export/cremma19_zola_f207.xml') },
    { name: 'Hooker/JDH_2_3_6_79_001.jpg', body: await fixture('models/hooker_JDH_2_3_6_79_001.jpg') },
    { name: 'Hooker/JDH_2_16_144_002.jpg', body: await fixture('correction/hooker_JDH_2_16_144_002.jpg') },
    { name: 'Hooker/page/JDH_2_3_6_79_001.xml', body: await fixture('models/hooker_JDH_2_3_6_79_001.xml') },
    { name: 'Hooker/page/JDH_2_16_144_002.xml', body: await fixture('models/hooker_JDH_2_16_144_002.xml') },
  ]);
  console.log(
    `# bench:model-jobs: ${pages.length} handwritten pages a job; ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}; ${new Date().toISOString()}`,
  );
  const service = await startService({ TRAINER: 'auto', TRAINING_MAX_MINUTES: values['training-minutes'] });
  const headers = { 'X-API-Key': service.key };
  try {
    const job = async (label: string, model?: string): Promise<number> => {
      const form = new FormData();
      form.append('scan_zip', new Blob([new Uint8Array(scan)], { type: 'application/zip' }), 'pages.zip');
      form.append('pdf_format', 'none');
      if (model) form.append('model', model);
      const started = performance.now();
      const response = await fetch(`${service.baseUrl}/v1/process-scan`, { method: 'POST', headers, body: form });
      if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
      const end = await service.waitForEnd(((await response.json()) as { job_id: string }).job_id);
      if (end.state !== 'done') throw new Error(`${label}: the job ended ${end.state}: ${end.error_message}`);
      const seconds = (performance.now() - started) / 1000;
      console.log(`${label}: ${seconds.toFixed(1)} s (${(seconds / pages.length).toFixed(2)} s a page)`);
      return seconds;
    };
    const model = async (id: string) =>
      (await (await fetch(`${service.baseUrl}/v1/models/${id}`, { headers })).json()) as {
        state: string;
        progress: { epoch: number } | null;
        figures: Record<string, number> | null;
        error_message: string | null;
      };

    await job('warm-up (models load)');
    const alone = await job('default model, nothing else running');

    const form = new FormData();
    form.append('label', 'bench');
    form.append('training_zip', new Blob([new Uint8Array(groundTruth)], { type: 'application/zip' }), 'truth.zip');
    const queued = await fetch(`${service.baseUrl}/v1/models`, { method: 'POST', headers, body: form });
    if (queued.status !== 202) throw new Error(`POST /v1/models: ${queued.status} ${await queued.text()}`);
    const modelId = ((await queued.json()) as { model_id: string }).model_id;
    // The job starts once the trainer is past cutting lines and trains (its first epoch reported).
    for (;;) {
      const status = await model(modelId);
      if (status.state === 'failed') throw new Error(`training failed: ${status.error_message}`);
      if (status.progress || status.state === 'ready') break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const beside = await job('default model, a training running beside it');
    const stillTraining = (await model(modelId)).state === 'training';
    let ready = await model(modelId);
    while (ready.state !== 'ready') {
      if (ready.state === 'failed') throw new Error(`training failed: ${ready.error_message}`);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      ready = await model(modelId);
    }
    console.log(`model ready: ${JSON.stringify(ready.figures)}`);
    const firstWithModel = await job('trained model, first job (fetched and loaded)', modelId);
    const withModel = await job('trained model, loaded', modelId);
    const defaultAfter = await job('default model again');
    console.log('');
    console.log(
      `a training beside the job: ${(beside / alone).toFixed(2)}× the job's time alone${stillTraining ? '' : ' (the training ended before the job did)'}`,
    );
    console.log(
      `reading with the trained model: ${(withModel / defaultAfter).toFixed(2)}× the default model (first job: ${(firstWithModel / defaultAfter).toFixed(2)}×)`,
    );
    console.log(`service peak RSS: ${Math.round(await service.peakRssMiB())} MiB`);
  } finally {
    await service.stop();
  }
  return 0;
}

if (import.meta.main) process.exitCode = await main();
