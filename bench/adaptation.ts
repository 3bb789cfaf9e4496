// `npm run bench:adaptation`: does fine-tuning on a hand's own pages make the service read its other
// pages better, on this machine's CPUs? For each validation document of ../shared/datasets/htr-pages
// with 3 pages or more (natural page order), the last two pages are the test pages; the trainer
// (train/finetune.py, the real one, as the trainer role spawns it) fine-tunes the default setup's
// recognizer on the first k pages (k = 1, 3 and all but the two, as the document allows), on lines
// cut by the service's own code (train/cut_lines.ts), and holds out part of them for its own
// validation as it always does. The two test pages are then read through the real page pipeline
// (recognizePage, the default setup: segmenter or uploaded lines, PP-OCRv4 screening, beam search
// with the language model) with the base recognizer and with the adapted one substituted:
//   - on the ground-truth lines given as the page's uploaded layout (recognition alone), and
//   - with --detected, on the lines the default setup finds itself.
// Prints and writes (OUT/adaptation.md, OUT/adaptation.json) per document and k: CER and WER
// before and after (text_norm level, bench/lib/text-metrics.ts), the relative change, training
// minutes, the trainer's peak resident memory, the lines it trained and validated on.
//
//   node bench/adaptation.ts [--dataset DIR] [--documents hooker:JDH_2_16_85,...] [--ks 1,3,rest]
//                            [--dir PAGES_DIR]... [--max-minutes 15] [--threads 2] [--detected] [--out DIR] [--work DIR]
//
// --dir adds a document given as a folder of page images with their PageXML or ALTO files (NAME.xml,
// NAME.alto.xml), pages in natural order of their names: a hand from elsewhere (--documents none:
// only those).
// Training runs live under --work (default /work/cache/adaptation/runs; not the repository): a
// run that finished is reused, one that was interrupted resumes from its checkpoint (--fresh
// starts over). Run it niced on a shared machine (`nice -n 10 npm run bench:adaptation`). The
// trainer's Python: $PYTHON, else the first of python3 and /usr/bin/python3 with PyTorch.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { loadConfig } from '../src/platform/config.ts';
import { OcrEngine } from '../src/recognition/engine/ocr-engine.ts';
import { defaultModelSpec } from '../src/recognition/models/default-model.ts';
import { parseUploadedLayout } from '../src/recognition/layout/uploaded-layout.ts';
import { loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import type { ModelSpec } from '../src/recognition/models/model-spec.ts';
import { withTrainedRecognizer } from '../src/recognition/models/trained-recognizer.ts';
import { allLines } from '../src/recognition/page/page-result.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { compareNatural } from '../src/shared/natural-sort.ts';
import { cutLines } from '../train/cut_lines.ts';
import { DEFAULT_HTR_PAGES, type EvalPage, pagesFromDataset } from './lib/htr-pages.ts';
import { markdownTable, percent } from './lib/table.ts';
import { type ErrorCount, errorRate, scorePage } from './lib/text-metrics.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

interface Reading {
  characters: ErrorCount;
  words: ErrorCount;
}

/** What the trainer said when it finished (train/finetune.py's `finished` event, with `started`'s counts). */
interface Trained {
  minutes: number;
  wallMinutes: number;
  peakRssMb: number;
  linesTrain: number;
  linesValidation: number;
  pagesTrain: number;
  pagesValidation: number;
  split: string;
  epochs: number;
  bestEpoch: number;
  stopped: string;
  baseValCer: number;
  bestValCer: number;
  charsetAdded: string[];
  blas: string;
  modelDir: string;
}

interface Row {
  document: string;
  k: number;
  trainPages: string[];
  testPages: string[];
  trained: Trained;
  before: Record<'gt' | 'detected', Reading | null>;
  after: Record<'gt' | 'detected', Reading | null>;
  /** The adapted weights with the base's language model and known words (ground-truth lines): the share of the text side. */
  afterWeightsOnly: Reading;
}

function trainerPython(): string {
  const candidates = [...new Set([process.env.PYTHON, 'python3', '/usr/bin/python3'].filter((c): c is string => Boolean(c)))];
  const found = candidates.find(
    (candidate) => spawnSync(candidate, ['-c', 'import torch, onnx, numpy, PIL'], { stdio: 'ignore' }).status === 0,
  );
  if (!found) throw new Error(`no Python with torch, onnx, numpy and Pillow (tried ${candidates.join(', ')}): see train/README.md`);
  return found;
}

/** The validation documents with at least 3 pages, each with its pages in natural order. */
function documentsOf(dataset: string, wanted: string[] | null): Map<string, string[]> {
  const [header, ...rows] = readFileSync(path.join(dataset, 'pages.tsv'), 'utf8').trim().split('\n');
  const columns = header.split('\t');
  const at = (cells: string[], name: string): string => cells[columns.indexOf(name)];
  const documents = new Map<string, string[]>();
  for (const cells of rows.map((row) => row.split('\t'))) {
    if (at(cells, 'split') !== 'val') continue;
    const document = at(cells, 'hand_or_document');
    documents.set(document, [...(documents.get(document) ?? []), at(cells, 'page')]);
  }
  for (const [document, pages] of documents) {
    if (pages.length < 3 || (wanted && !wanted.includes(document))) documents.delete(document);
    else pages.sort(compareNatural);
  }
  return new Map([...documents].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0])));
}

/** A folder of page images with their PageXML or ALTO files as one document, its pages in natural order. */
async function documentOfFolder(directory: string): Promise<EvalPage[]> {
  const files = readdirSync(directory).sort(compareNatural);
  const pages: EvalPage[] = [];
  for (const file of files.filter((name) => /\.(jpe?g|png|tiff?|webp)$/i.test(name))) {
    const stem = file.replace(/\.[^.]+$/, '');
    const xml = [`${stem}.xml`, `${stem}.alto.xml`].find((name) => files.includes(name));
    if (!xml) continue;
    const imagePath = path.join(directory, file);
    const metadata = await sharp(imagePath).metadata();
    const swap = (metadata.orientation ?? 1) >= 5;
    const size = { width: swap ? metadata.height : metadata.width, height: swap ? metadata.width : metadata.height };
    const truth = parseUploadedLayout(readFileSync(path.join(directory, xml)), size, { outsideImage: 'skip' });
    pages.push({ name: stem, source: path.basename(directory), language: 'fra', imagePath, ...size, truth });
  }
  if (pages.length < 3) throw new Error(`${directory}: ${pages.length} pages with their layout files; 3 or more are needed`);
  return pages;
}

/** k = 1, 3 and all but the two test pages, as the document allows. */
function trainingSizes(pages: number, asked: string[]): number[] {
  const pool = pages - 2;
  return [...new Set(asked.map((k) => (k === 'rest' ? pool : Number(k))).filter((k) => k >= 1 && k <= pool))].sort((a, b) => a - b);
}

/**
 * The default setup with the adapted recognizer, as a job that names the model reads (models/trained-recognizer.ts);
 * `weightsOnly`: with the base's language model and known words instead of the adapted ones.
 */
function withRecognizer(setup: ModelSpec, adapted: ModelSpec, weightsOnly = false): ModelSpec {
  const spec = withTrainedRecognizer(setup, adapted);
  return weightsOnly ? { ...spec, languageModel: setup.languageModel } : spec;
}

async function readPages(engine: OcrEngine, pages: EvalPage[], groundTruthLines: boolean, maxPixels: number): Promise<Reading> {
  const characters: ErrorCount[] = [];
  const words: ErrorCount[] = [];
  for (const [index, page] of pages.entries()) {
    const { page: result } = await recognizePage(engine, readFileSync(page.imagePath), {
      name: path.basename(page.imagePath),
      pageNumber: index + 1,
      maxPixels,
      recognize: true,
      ...(groundTruthLines ? { layout: page.truth } : {}),
    });
    const score = scorePage(
      allLines(result).map((line) => line.text),
      page.truth.regions.flatMap((region) => region.lines.map((line) => line.text)),
    );
    characters.push(score.characters);
    words.push(score.words);
  }
  const sum = (counts: ErrorCount[]): ErrorCount => ({
    errors: counts.reduce((total, count) => total + count.errors, 0),
    length: counts.reduce((total, count) => total + count.length, 0),
  });
  return { characters: sum(characters), words: sum(words) };
}

async function readBoth(
  spec: ModelSpec,
  pages: EvalPage[],
  detected: boolean,
  settings: { threads: number; concurrency: number },
  maxPixels: number,
  decoder: 'greedy' | 'beam',
) {
  const engine = await OcrEngine.load(spec, { ...settings, decoder });
  try {
    return {
      gt: await readPages(engine, pages, true, maxPixels),
      detected: detected ? await readPages(engine, pages, false, maxPixels) : null,
    };
  } finally {
    await engine.close();
  }
}

/** Runs train/finetune.py as the trainer role does (JSON lines on stdout), resuming a run that was interrupted. */
function train(
  python: string,
  base: string,
  lines: string,
  run: string,
  maxMinutes: number,
  threads: number,
  cache: string,
): Promise<Trained> {
  return new Promise((resolve, reject) => {
    const args = [
      path.join(ROOT, 'train/finetune.py'),
      '--base',
      base,
      '--lines',
      lines,
      '--run',
      run,
      '--max-minutes',
      String(maxMinutes),
    ];
    // one malloc arena, as the service's image sets for its own processes (ADR 0052)
    const env = { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '1' };
    const child = spawn(python, [...args, '--threads', String(threads), '--resume', '--base-cache', cache], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let started: Record<string, unknown> = {};
    let finished: Record<string, unknown> | null = null;
    let failure = '';
    let pending = '';
    const log: string[] = [];
    child.stderr.on('data', (chunk: Buffer) => log.push(chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const event = JSON.parse(line) as Record<string, unknown>;
        if (event.event === 'started') {
          started = event;
          process.stderr.write(
            `  trainer: ${event.lines_train} lines to train on, ${event.lines_validation} to validate (${event.split}), base val CER ${percent(event.base_val_cer as number)}, ${event.planned_epochs} epochs planned, BLAS ${event.blas}${event.resumed ? ', resumed' : ''}\n`,
          );
        } else if (event.event === 'epoch') {
          process.stderr.write(
            `  epoch ${event.epoch}: loss ${(event.train_loss as number).toFixed(3)}, val CER ${percent(event.val_cer as number)}${event.best ? ' (best)' : ''}, ${((event.seconds as number) / 60).toFixed(1)} min\n`,
          );
        } else if (event.event === 'finished') finished = event;
        else if (event.event === 'failed') failure = `${event.code}: ${event.message}`;
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0 || !finished) {
        reject(new Error(`finetune.py exited ${code}${failure ? ` (${failure})` : ''}: ${log.join('').slice(-2000)}`));
        return;
      }
      const f = finished;
      resolve({
        minutes: f.minutes as number,
        wallMinutes: f.wall_minutes as number,
        peakRssMb: f.peak_rss_mb as number,
        linesTrain: f.lines_train as number,
        linesValidation: f.lines_validation as number,
        pagesTrain: started.pages_train as number,
        pagesValidation: started.pages_validation as number,
        split: started.split as string,
        epochs: f.epochs as number,
        bestEpoch: f.best_epoch as number,
        stopped: f.stopped as string,
        baseValCer: f.base_val_cer as number,
        bestValCer: f.best_val_cer as number,
        charsetAdded: f.charset_added as string[],
        blas: started.blas as string,
        modelDir: f.model as string,
      });
    });
  });
}

const change = (before: number, after: number): string => (before === 0 ? 'n/a' : `${(((after - before) / before) * 100).toFixed(0)}%`);

function table(rows: Row[], detected: boolean): string {
  const cells = (row: Row, which: 'gt' | 'detected'): string[] => {
    const b = row.before[which];
    const a = row.after[which];
    if (!b || !a) return which === 'gt' ? ['', '', '', '', '', '', ''] : ['', '', '', '', '', ''];
    const [cb, ca, wb, wa] = [errorRate(b.characters), errorRate(a.characters), errorRate(b.words), errorRate(a.words)];
    const weightsOnly = which === 'gt' ? [percent(errorRate(row.afterWeightsOnly.characters))] : [];
    return [percent(cb), percent(ca), change(cb, ca), ...weightsOnly, percent(wb), percent(wa), change(wb, wa)];
  };
  const header = [
    'document',
    'k pages',
    'lines train / val',
    'test chars',
    'CER before',
    'CER after',
    'Δ CER',
    'CER after, base LM',
    'WER before',
    'WER after',
    'Δ WER',
    ...(detected
      ? ['CER before (detected)', 'CER after (detected)', 'Δ CER (detected)', 'WER before (det.)', 'WER after (det.)', 'Δ WER (det.)']
      : []),
    'train min',
    'epochs (best)',
    'peak RSS',
    'added chars',
  ];
  return markdownTable(
    header,
    rows.map((row) => [
      row.document,
      String(row.k),
      `${row.trained.linesTrain} / ${row.trained.linesValidation}`,
      String(row.before.gt?.characters.length ?? ''),
      ...cells(row, 'gt'),
      ...(detected ? cells(row, 'detected') : []),
      row.trained.minutes.toFixed(1),
      `${row.trained.epochs} (${row.trained.bestEpoch}, ${row.trained.stopped})`,
      `${Math.round(row.trained.peakRssMb)} MB`,
      row.trained.charsetAdded.join(' ') || '–',
    ]),
  );
}

/** Character-weighted totals over rows of one k group. */
function pooled(rows: Row[], which: 'gt' | 'detected'): string[] {
  const sum = (pick: (row: Row) => ErrorCount | undefined): ErrorCount => {
    const counts = rows.map(pick).filter((count): count is ErrorCount => count !== undefined);
    return { errors: counts.reduce((t, c) => t + c.errors, 0), length: counts.reduce((t, c) => t + c.length, 0) };
  };
  const cb = errorRate(sum((row) => row.before[which]?.characters));
  const ca = errorRate(sum((row) => row.after[which]?.characters));
  const wb = errorRate(sum((row) => row.before[which]?.words));
  const wa = errorRate(sum((row) => row.after[which]?.words));
  return [percent(cb), percent(ca), change(cb, ca), percent(wb), percent(wa), change(wb, wa)];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      dataset: { type: 'string', default: DEFAULT_HTR_PAGES },
      documents: { type: 'string' },
      dir: { type: 'string', multiple: true, default: [] },
      ks: { type: 'string', default: '1,3,rest' },
      'max-minutes': { type: 'string', default: '15' },
      threads: { type: 'string', default: '2' },
      detected: { type: 'boolean', default: false },
      fresh: { type: 'boolean', default: false },
      out: { type: 'string', default: path.join(os.tmpdir(), 'hwr-adaptation') },
      work: { type: 'string', default: '/work/cache/adaptation/runs' },
    },
  });
  const config = loadConfig();
  const settings = { threads: config.recognition.threads, concurrency: config.recognition.concurrency };
  const decoder = config.recognition.decoder;
  const setup = defaultModelSpec();
  const baseDir = path.dirname(setup.recognition.file);
  const python = trainerPython();
  const documents = documentsOf(values.dataset, values.documents ? values.documents.split(',') : null);
  mkdirSync(values.out, { recursive: true });
  const images = path.join(values.work, 'images');
  const pages = new Map(pagesFromDataset(values.dataset, 'val', images).map((page) => [page.name, page]));
  for (const directory of values.dir) {
    const folder = await documentOfFolder(directory);
    for (const page of folder) pages.set(page.name, page);
    documents.set(
      `dir:${path.basename(path.resolve(directory))}`,
      folder.map((page) => page.name),
    );
  }
  if (documents.size === 0) throw new Error('no document with 3 pages or more');
  const rows: Row[] = [];
  const started = performance.now();
  console.log(
    `# bench:adaptation: ${documents.size} documents of ${values.dataset} (val); base ${setup.recognitionSource.name} ${setup.recognitionSource.version} in ${setup.name} ${setup.version}; decoding ${decoder}; trainer ${python}, --max-minutes ${values['max-minutes']}, ${values.threads} threads; ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}; ${new Date().toISOString()}`,
  );
  for (const [document, names] of documents) {
    const test = names.slice(-2).map((name) => pages.get(name) as EvalPage);
    const pool = names.slice(0, -2);
    process.stderr.write(`${document}: test pages ${test.map((page) => page.name).join(', ')}; reading them with the base\n`);
    const before = await readBoth(setup, test, values.detected, settings, config.limits.maxImagePixels, decoder);
    for (const k of trainingSizes(names.length, values.ks.split(','))) {
      const trainPages = pool.slice(0, k);
      const run = path.join(values.work, document.replace(/[^A-Za-z0-9_-]/g, '_'), `k${k}`);
      if (values.fresh) rmSync(run, { recursive: true, force: true });
      const resultFile = path.join(run, 'trained.json');
      let trained: Trained;
      if (existsSync(resultFile)) {
        trained = JSON.parse(readFileSync(resultFile, 'utf8')) as Trained;
        process.stderr.write(`${document}, k=${k}: reusing ${run}\n`);
      } else {
        process.stderr.write(`${document}, k=${k}: cutting the lines of ${trainPages.join(', ')}\n`);
        const cut = await cutLines(
          trainPages.map((name) => {
            const page = pages.get(name) as EvalPage;
            return { name, image: readFileSync(page.imagePath), lines: () => page.truth.regions.flatMap((region) => region.lines) };
          }),
          baseDir,
          path.join(run, 'lines'),
        );
        process.stderr.write(`${document}, k=${k}: ${cut.lines} lines; training\n`);
        trained = await train(
          python,
          baseDir,
          cut.out,
          path.join(run, 'trainer'),
          Number(values['max-minutes']),
          Number(values.threads),
          path.join(values.work, 'base-cache'),
        );
        writeFileSync(resultFile, JSON.stringify(trained, null, 1));
      }
      const adapted = loadModelSpec(trained.modelDir);
      const after = await readBoth(withRecognizer(setup, adapted), test, values.detected, settings, config.limits.maxImagePixels, decoder);
      const weightsOnly = withRecognizer(setup, adapted, true);
      const { gt: afterWeightsOnly } = await readBoth(weightsOnly, test, false, settings, config.limits.maxImagePixels, decoder);
      const row: Row = { document, k, trainPages, testPages: test.map((page) => page.name), trained, before, after, afterWeightsOnly };
      rows.push(row);
      const gt = (reading: Reading | null): string => (reading ? percent(errorRate(reading.characters)) : 'n/a');
      process.stderr.write(
        `${document}, k=${k}: CER ${gt(before.gt)} -> ${gt(after.gt)} on the ground-truth lines${values.detected ? `, ${gt(before.detected)} -> ${gt(after.detected)} on detected lines` : ''}; ${trained.minutes.toFixed(1)} min, ${Math.round(trained.peakRssMb)} MB [${((performance.now() - started) / 60000).toFixed(0)} min]\n`,
      );
      writeFileSync(path.join(values.out, 'adaptation.json'), JSON.stringify({ dataset: values.dataset, rows }, null, 1));
    }
  }
  // k asked as a number is its own group; `rest` (all but the two test pages) pools documents of different lengths.
  const groupOf = (row: Row): string => (values.ks.split(',').includes(String(row.k)) ? String(row.k) : 'all but two');
  const byK = [...new Set(rows.map(groupOf))].map((label) => {
    const members = rows.filter((row) => groupOf(row) === label);
    return [label, String(members.length), ...pooled(members, 'gt'), ...(values.detected ? pooled(members, 'detected') : [])];
  });
  const summary = markdownTable(
    [
      'k pages',
      'documents',
      'CER before',
      'CER after',
      'Δ CER',
      'WER before',
      'WER after',
      'Δ WER',
      ...(values.detected
        ? ['CER before (det.)', 'CER after (det.)', 'Δ CER (det.)', 'WER before (det.)', 'WER after (det.)', 'Δ WER (det.)']
        : []),
    ],
    byK,
  );
  const markdown = [
    `Test pages: the last two of each document, read through the page pipeline on their ground-truth lines${values.detected ? ' and on the lines the setup detects' : ''}.`,
    '',
    table(rows, values.detected),
    '',
    'Pooled over the documents (character- and word-weighted), by the pages trained on:',
    '',
    summary,
    '',
  ].join('\n');
  console.log(`\n${markdown}`);
  writeFileSync(path.join(values.out, 'adaptation.md'), markdown);
  process.stderr.write(`report: ${path.join(values.out, 'adaptation.md')}, ${path.join(values.out, 'adaptation.json')}\n`);
  return 0;
}

if (import.meta.main) process.exitCode = await main();
