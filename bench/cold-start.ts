// Cold start (issue 43 item 5; docs/benchmarks.md, "Cold start"): how long one page takes from
// nothing, and how much of it is loading models.
//  - `hwr recognize PAGE` as a fresh process, wall time from spawn to exit, for a handwritten page,
//    a large handwritten page and a printed page; with --before DIR, the same command of another
//    checkout (e.g. a git worktree of the commit before a change) alternating with ours, so that
//    both see the same load;
//  - in a fresh process each: the engine's setup (OcrEngine.load), the first page (as a new
//    worker's first page: the same sharedEngine and recognizePage path), the same page again, the
//    models loaded after it and the milliseconds spent loading each (queue in the inference worker
//    included).
//
//   node bench/cold-start.ts [--rounds N] [--before DIR]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { loadConfig } from '../src/platform/config.ts';
import * as onnx from '../src/recognition/models/onnx.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { markdownTable } from './lib/table.ts';

const root = path.resolve(import.meta.dirname, '..');
const pages = {
  'handwritten, 2 Mpx (copiste)': path.join(root, 'test/fixtures/pages/copiste_wikitexte_0219_2.jpg'),
  'handwritten, 14.6 Mpx (peraire)': path.join(root, 'test/fixtures/pages/peraire_test_B.12.japon3_0048.jpg'),
  'printed, 8.4 Mpx (Dracula)': path.join(root, 'test/fixtures/pages/fondue_en_print_dracula_page_51.png'),
};

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, before: { type: 'string' }, child: { type: 'string' } },
});

if (values.child) {
  await child(values.child);
} else {
  await main(Number(values.rounds), values.before);
}

/** One page in this process, cold: printed as one JSON line. */
async function child(image: string): Promise<void> {
  const started = performance.now();
  const config = loadConfig();
  const engine = await sharedEngine(config.recognition);
  const setupMs = performance.now() - started;
  const bytes = await readFile(image);
  const read = () =>
    recognizePage(engine, bytes, { name: path.basename(image), pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true });
  let start = performance.now();
  await read();
  const firstMs = performance.now() - start;
  const loaded = 'loadedModels' in engine ? (engine.loadedModels as string[]) : ['all'];
  // (a checkout from before lazy loading has no load totals)
  const totals: Map<string, { ms: number }> =
    'modelLoadTotals' in onnx ? (onnx.modelLoadTotals as () => Map<string, { ms: number }>)() : new Map();
  const loads = [...totals].map(([file, { ms }]) => `${path.basename(file)} ${Math.round(ms)}`);
  start = performance.now();
  await read();
  const secondMs = performance.now() - start;
  await closeSharedEngines();
  console.log(JSON.stringify({ setupMs, firstMs, secondMs, loaded, loads }));
}

async function main(rounds: number, before: string | undefined): Promise<void> {
  const commit = (dir: string) => execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const load = () => os.loadavg()[0].toFixed(1);
  const loads: string[] = [load()];
  console.log(
    `# hwr cold start (${os.cpus().length} cores; ours at ${commit(root)}${before ? `, before at ${commit(before)}` : ''}; ${rounds} rounds)\n`,
  );

  const cli = (dir: string, image: string): number => {
    const started = performance.now();
    const run = spawnSync(process.execPath, [path.join(dir, 'src/cli/main.ts'), 'recognize', image], { cwd: dir, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`hwr recognize ${image} in ${dir}: ${run.stderr}`);
    return (performance.now() - started) / 1000;
  };
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  const rows: string[][] = [];
  for (const [label, image] of Object.entries(pages)) {
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      if (before) theirs.push(cli(before, image));
      ours.push(cli(root, image));
      loads.push(load());
    }
    const list = (times: number[]) => `${median(times).toFixed(2)} (${times.map((time) => time.toFixed(2)).join(', ')})`;
    rows.push([label, ...(before ? [list(theirs)] : []), list(ours)]);
  }
  console.log('`hwr recognize PAGE`, a fresh process each, wall seconds: median (each run)\n');
  console.log(markdownTable(['page', ...(before ? ['before'] : []), 'ours'], rows));

  const inProcess: string[][] = [];
  // Before: where DIR has this bench (copied there: it reads DIR's own code).
  const checkouts = [...(before && existsSync(path.join(before, 'bench/cold-start.ts')) ? [['before', before]] : []), ['ours', root]];
  for (const [[label, image], [which, dir]] of Object.entries(pages).flatMap((page) => checkouts.map((checkout) => [page, checkout]))) {
    const run = spawnSync(process.execPath, [path.join(dir, 'bench/cold-start.ts'), '--child', image], { cwd: dir, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`child ${image} in ${dir}: ${run.stderr}`);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as {
      setupMs: number;
      firstMs: number;
      secondMs: number;
      loaded: string[];
      loads: string[];
    };
    inProcess.push([
      `${label}, ${which}`,
      result.setupMs.toFixed(0),
      result.firstMs.toFixed(0),
      result.secondMs.toFixed(0),
      (result.firstMs - result.secondMs).toFixed(0),
      result.loaded.join(', '),
      result.loads.join(', '),
    ]);
    loads.push(load());
  }
  console.log(
    '\nIn a fresh process each (ms): engine setup, first page, the same page again, the difference, the models loaded, ms loading each\n',
  );
  console.log(markdownTable(['page', 'setup', 'first page', 'again', 'first − again', 'models loaded', 'load ms (model file)'], inProcess));
  console.log(`\n1-minute load average during the runs: ${loads.join(' → ')}`);
}
