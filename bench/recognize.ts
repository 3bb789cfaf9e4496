// `npm run bench:recognize`: speed and memory of our pipeline and of tesseract on the
// same pages (../shared/fixtures/pages): pages per second, milliseconds per stage
// (decode, detection, recognition), peak resident memory, and the ratios. When our setup
// is not the built-in PP-OCRv4 alone (the default before issue 7: MODEL_DIR, or the default
// of our handwriting recognizer with PP-OCRv4 screening), PP-OCRv4 alone runs too, in its
// own child process, for the before/after of the default.
//
//   node bench/recognize.ts [--pages DIR] [--rounds N] [--no-builtin]
//
// Ours runs in a child process (so its peak memory is its own), with the service's runtime settings
// (bench/lib/runtime-env.ts: glibc's arenas and mmap and trim thresholds, V8's --max-semi-space-size=4,
// as `npm start` and the image set them, unless the environment sets its own): models load once,
// one untimed warm-up page, then every page `rounds` times, one after another, as a
// worker processes pages. Tesseract runs as it is run at scale (bench/lib/tesseract.ts): one
// single-threaded process per page (OMP_THREAD_LIMIT=1), as many at once as cores, each page in
// its language, every page `rounds` times; its speed is that pool's throughput over the same
// pages in the same run (no per-page tesseract timing: one process's time is not its speed);
// its peak memory, per process, comes from GNU time (/usr/bin/time) when installed.
// Threads: ORT_THREADS (default: all cores) for ours, one page at a time; bench:throughput runs
// the whole service, several pages at once, from outside.
// Model time: each model's runs in the inference worker (src/recognition/models/onnx.ts's run totals),
// per page and page kind, and the page's time outside them.
// Main-thread hold: while ours runs the pages, perf_hooks' monitorEventLoopDelay (10 ms resolution)
// records how long a timer waited past its time, i.e. how long a request to a process that also
// serves HTTP (`hwr serve`) would wait behind page work: its longest wait and 99th percentile.
// Last, issue 43's in-process aims beside this run's figures (bench/lib/recognition-aims.ts).
import { spawn } from 'node:child_process';
import os from 'node:os';
import { readFile } from 'node:fs/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/platform/config.ts';
import { allLines } from '../src/recognition/page/page-result.ts';
import { recognizePage, type StageTimings } from '../src/recognition/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { defaultModelSpec } from '../src/recognition/models/default-model.ts';
import { builtinModelSpec } from '../src/recognition/models/model-manifest.ts';
import { modelRunTotals } from '../src/recognition/models/onnx.ts';
import { OcrEngine } from '../src/recognition/engine/ocr-engine.ts';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { inProcessAimLines } from './lib/recognition-aims.ts';
import { markdownTable, megabytes } from './lib/table.ts';
import { serviceRuntimeEnv } from './lib/runtime-env.ts';
import { runTesseractPool, tesseractVersion, type TesseractPool } from './lib/tesseract.ts';

interface OurPage {
  name: string;
  kind: string;
  megapixels: number;
  lines: number;
  timings: StageTimings[];
  /** Milliseconds of model runs in the inference worker per round, by model (OurRun.models' order). */
  modelMs: number[];
}

interface OurRun {
  model: string;
  threads: number;
  loadMs: number;
  pages: OurPage[];
  peakBytes: number;
  /** The models run, by role, in the order of OurPage.modelMs. */
  models: string[];
  /** Event-loop delay while the pages ran (after the warm-up page), in ms. */
  eventLoop: { maxMs: number; p99Ms: number };
}

const { values } = parseArgs({
  options: {
    pages: { type: 'string', default: DEFAULT_PAGES_DIR },
    rounds: { type: 'string', default: '1' },
    child: { type: 'boolean', default: false },
    builtin: { type: 'boolean', default: false },
    'no-builtin': { type: 'boolean', default: false },
  },
});
const rounds = Math.max(1, Number(values.rounds) || 1);

if (values.child) {
  process.stdout.write(JSON.stringify(await runOurs(values.pages, rounds, values.builtin)));
} else {
  process.exitCode = await main();
}

async function runOurs(directory: string, rounds: number, builtin: boolean): Promise<OurRun> {
  const pages = listFixturePages(directory);
  const config = loadConfig();
  let started = performance.now();
  const engine = builtin ? await OcrEngine.load(builtinModelSpec(), config.recognition) : await sharedEngine(config.recognition);
  // every model now (they load lazily, at a page's first use of each: bench/cold-start.ts times that)
  await engine.loadAll();
  const loadMs = performance.now() - started;
  const { spec } = engine;
  const roles: [string, string | undefined][] = [
    ['line segmenter', spec.segmentation?.file],
    ['text detector', spec.detection.file],
    [`main recognizer (${spec.recognitionSource.name})`, spec.recognition.file],
    ['screening recognizer', spec.screening?.recognition.file],
    [`print reader (${spec.screening?.print?.source.name})`, spec.screening?.print?.recognition.file],
    ['direction classifier', spec.orientation?.file],
  ];
  const models = roles.filter((role): role is [string, string] => role[1] !== undefined);
  const modelTotals = (): number[] => {
    const totals = modelRunTotals();
    return models.map(([, file]) => totals.get(file) ?? 0);
  };
  const options = (name: string, pageNumber: number) => ({ name, pageNumber, maxPixels: config.limits.maxImagePixels, recognize: true });
  try {
    await recognizePage(engine, await readFile(pages[0].imagePath), options('warm-up', 0));
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const results: OurPage[] = [];
    for (const [index, page] of pages.entries()) {
      const bytes = await readFile(page.imagePath);
      const timings: StageTimings[] = [];
      let lines = 0;
      let megapixels = 0;
      const modelsBefore = modelTotals();
      for (let round = 0; round < rounds; round += 1) {
        started = performance.now();
        const result = await recognizePage(engine, bytes, options(page.name, index + 1));
        timings.push(result.timings);
        lines = allLines(result.page).length;
        megapixels = (result.page.image.width * result.page.image.height) / 1e6;
      }
      const modelMs = modelTotals().map((ms, model) => (ms - (modelsBefore[model] as number)) / rounds);
      results.push({ name: page.name, kind: page.kind, megapixels, lines, timings, modelMs });
    }
    delay.disable();
    const decoding = engine.decoders.main === 'beam' ? ', beam search' : '';
    return {
      eventLoop: { maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6 },
      model: `${engine.spec.name} ${engine.spec.version}${decoding}`,
      threads: config.recognition.threads,
      loadMs,
      pages: results,
      peakBytes: process.resourceUsage().maxRSS * 1024,
      models: models.map(([role]) => role),
    };
  } finally {
    if (builtin) await engine.close();
    await closeSharedEngines();
  }
}

async function main(): Promise<number> {
  const pages = listFixturePages(values.pages);
  const version = await tesseractVersion();
  console.log(
    `# recognition speed on ${pages.length} pages, ${rounds} round(s); ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown CPU'})`,
  );
  const ours = await runChild(false);
  const config = loadConfig();
  const before =
    !values['no-builtin'] && (config.recognition.modelDir !== null || defaultModelSpec().screening !== null) ? await runChild(true) : null;
  console.log(
    `ours: ${ours.model}, ORT_THREADS=${ours.threads}, models loaded in ${ours.loadMs.toFixed(0)} ms (once per process, not counted below)`,
  );
  if (before) console.log(`before: ${before.model} alone (the default before issue 7), models loaded in ${before.loadMs.toFixed(0)} ms`);
  const tesseract: TesseractPool | null = version ? await runTesseractPool(Array.from({ length: rounds }, () => pages).flat()) : null;
  console.log(
    `peer: ${version ?? 'tesseract not installed'}${tesseract ? `, ${tesseract.processes} processes at once, OMP_THREAD_LIMIT=1, each page's language; its figures are that pool's throughput` : ''}\n`,
  );

  const mean = (list: number[]): number => list.reduce((sum, value) => sum + value, 0) / Math.max(1, list.length);
  const stage = (page: OurPage, key: keyof StageTimings): number => mean(page.timings.map((timing) => timing[key]));
  const total = (page: OurPage): number => stage(page, 'decodeMs') + stage(page, 'detectionMs') + stage(page, 'recognitionMs');
  const rows = ours.pages.map((page, index) => {
    const old = before?.pages[index];
    return [
      page.name,
      page.megapixels.toFixed(1),
      String(page.lines),
      stage(page, 'decodeMs').toFixed(0),
      stage(page, 'detectionMs').toFixed(0),
      stage(page, 'recognitionMs').toFixed(0),
      total(page).toFixed(0),
      ...(old ? [total(old).toFixed(0), `${(total(old) / total(page)).toFixed(2)}x`] : []),
    ];
  });
  console.log(
    markdownTable(
      [
        'page',
        'MP',
        'lines',
        'decode ms',
        'detection ms',
        'recognition ms',
        'ours ms',
        ...(before ? ['PP-OCRv4 alone ms', 'PP/ours'] : []),
      ],
      rows,
    ),
  );

  const ourSeconds = ours.pages.reduce((sum, page) => sum + total(page), 0) / 1000;
  // The pool's wall time per round: what the same pages cost tesseract run one process per core.
  const peerSeconds = tesseract ? tesseract.wallMs / rounds / 1000 : 0;
  const peerPeak = tesseract?.peakBytes ?? null;
  const perStage = (key: keyof StageTimings): string => mean(ours.pages.map((page) => stage(page, key))).toFixed(0);
  const beforeSeconds = before ? before.pages.reduce((sum, page) => sum + total(page), 0) / 1000 : 0;
  const beforeStage = (key: keyof StageTimings): string => (before ? mean(before.pages.map((page) => stage(page, key))).toFixed(0) : '');
  const meanKindSeconds = (run: OurRun, kind: string): number | null => {
    const chosen = run.pages.filter((page) => page.kind === kind);
    return chosen.length === 0 ? null : chosen.reduce((sum, page) => sum + total(page), 0) / chosen.length / 1000;
  };
  const kindSeconds = (run: OurRun, kind: string): string => meanKindSeconds(run, kind)?.toFixed(2) ?? 'n/a';
  console.log('');
  console.log(
    markdownTable(
      [
        'summary',
        'ours',
        ...(before ? ['PP-OCRv4 alone', 'ratio (PP-OCRv4 alone / ours)'] : []),
        `tesseract (${tesseract?.processes ?? os.availableParallelism()} × 1 thread)`,
        'ours ÷ tesseract',
      ],
      [
        [
          'pages per second',
          (pages.length / ourSeconds).toFixed(3),
          ...(before ? [(pages.length / beforeSeconds).toFixed(3), `${(beforeSeconds / ourSeconds).toFixed(2)}x`] : []),
          tesseract ? (pages.length / peerSeconds).toFixed(3) : 'n/a',
          tesseract ? `${(peerSeconds / ourSeconds).toFixed(2)}x` : 'n/a',
        ],
        [
          'seconds per page (1 / pages per second)',
          (ourSeconds / pages.length).toFixed(2),
          ...(before ? [(beforeSeconds / pages.length).toFixed(2), ''] : []),
          tesseract ? (peerSeconds / pages.length).toFixed(2) : 'n/a',
          tesseract ? `${(ourSeconds / peerSeconds).toFixed(2)}x` : 'n/a',
        ],
        [
          'seconds per handwritten page',
          kindSeconds(ours, 'handwritten'),
          ...(before ? [kindSeconds(before, 'handwritten'), ''] : []),
          '',
          '',
        ],
        ['seconds per printed page', kindSeconds(ours, 'printed'), ...(before ? [kindSeconds(before, 'printed'), ''] : []), '', ''],
        ['decode ms per page', perStage('decodeMs'), ...(before ? [beforeStage('decodeMs'), ''] : []), '', ''],
        ['detection ms per page', perStage('detectionMs'), ...(before ? [beforeStage('detectionMs'), ''] : []), '', ''],
        ['recognition ms per page', perStage('recognitionMs'), ...(before ? [beforeStage('recognitionMs'), ''] : []), '', ''],
        [
          'main thread held, longest / p99 ms',
          `${ours.eventLoop.maxMs.toFixed(0)} / ${ours.eventLoop.p99Ms.toFixed(0)}`,
          ...(before ? [`${before.eventLoop.maxMs.toFixed(0)} / ${before.eventLoop.p99Ms.toFixed(0)}`, ''] : []),
          '',
          '',
        ],
        [
          'peak memory (RSS), per process',
          megabytes(ours.peakBytes),
          ...(before ? [megabytes(before.peakBytes), ''] : []),
          peerPeak && tesseract ? `${megabytes(peerPeak)} (× ${tesseract.processes} at once)` : 'n/a',
          peerPeak && tesseract
            ? `${(ours.peakBytes / (peerPeak * tesseract.processes)).toFixed(2)}x of all ${tesseract.processes}`
            : 'n/a',
        ],
      ],
    ),
  );
  console.log('');
  console.log(modelTimeTable(ours, total));
  console.log('');
  console.log(`aims in process (issue 43; this machine, ${os.availableParallelism()} cores):`);
  const figures = {
    handwrittenSeconds: meanKindSeconds(ours, 'handwritten'),
    printedSeconds: meanKindSeconds(ours, 'printed'),
    peakBytes: ours.peakBytes,
  };
  for (const line of inProcessAimLines(figures)) console.log(line);
  return 0;
}

/**
 * Where our page time goes: each model's runs in the inference worker, and the rest (image
 * decoding, cropping, CTC decoding with the language model, assembly), per page and by kind.
 */
function modelTimeTable(run: OurRun, pageMs: (page: OurPage) => number): string {
  const kinds = ['all', ...new Set(run.pages.map((page) => page.kind))];
  const pagesOf = (kind: string) => run.pages.filter((page) => kind === 'all' || page.kind === kind);
  const perPage = (kind: string, value: (page: OurPage) => number): number => {
    const chosen = pagesOf(kind);
    return chosen.reduce((sum, page) => sum + value(page), 0) / Math.max(1, chosen.length);
  };
  const cell = (kind: string, value: (page: OurPage) => number): string => {
    const ms = perPage(kind, value);
    return `${ms.toFixed(0)} (${((100 * ms) / perPage(kind, pageMs)).toFixed(0)} %)`;
  };
  const modelSum = (page: OurPage) => page.modelMs.reduce((sum, ms) => sum + ms, 0);
  return markdownTable(
    ['ms per page (share of the page)', ...kinds.map((kind) => `${kind} pages`)],
    [
      ...run.models.map((role, model) => [role, ...kinds.map((kind) => cell(kind, (page) => page.modelMs[model] as number))]),
      ['all model runs', ...kinds.map((kind) => cell(kind, modelSum))],
      [
        'outside the models (decoding, crops, CTC decoding, assembly)',
        ...kinds.map((kind) => cell(kind, (page) => pageMs(page) - modelSum(page))),
      ],
    ],
  );
}

function runChild(builtin: boolean): Promise<OurRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [import.meta.filename, '--child', '--pages', values.pages, '--rounds', String(rounds), ...(builtin ? ['--builtin'] : [])],
      // the service's runtime settings (glibc's malloc, V8's semi-spaces), so that its speed and peak are a service process's
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...serviceRuntimeEnv() } },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(output) as OurRun) : reject(new Error(`benchmark child exited with ${code}`)),
    );
  });
}
