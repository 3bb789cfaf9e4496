// The peer tool: Debian's tesseract-ocr, run as a command on a page image, timed,
// with its peak memory taken from GNU time when /usr/bin/time is there.
//
// Run as it is run at scale (issue 43): one single-threaded process per page
// (`OMP_THREAD_LIMIT=1`), as many at once as there are cores, each page in its language, and
// its speed is the throughput of that pool. Debian's tesseract is built with OpenMP; left at
// its default it starts a thread per core in each process, and on 2 shared cores a printed page
// took 21.9 s that way against 2.55 s single-threaded: the old comparisons measured that.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import type { Point } from '../../src/recognition/page/page-result.ts';
import { mapPool } from './pool.ts';

export interface TesseractRun {
  lines: string[];
  /** This one process's wall time (single-threaded, beside the pool's other processes): not the tool's speed; see TesseractPool. */
  ms: number;
  /** Peak resident memory in bytes, or null when GNU time is not installed. */
  peakBytes: number | null;
  /** CPU seconds (user + system, GNU time), or null without it. */
  cpuSeconds: number | null;
  /** With `{ boxes: true }`: each line's box (x, y, width, height in pixels), parallel to `lines`. */
  boxes?: [number, number, number, number][];
}

export interface TesseractPool {
  /** One run per page, in the pages' order. */
  runs: TesseractRun[];
  /** Processes at once (OMP_THREAD_LIMIT=1 each). */
  processes: number;
  /** Wall time from the first process started to the last ended: the figure to compare. */
  wallMs: number;
  /** From the pool's start to its first page done. */
  firstDoneMs: number;
  pagesPerSecond: number;
  /** The largest one process's peak resident memory (bytes), or null without GNU time. */
  peakBytes: number | null;
  /** CPU seconds of all its processes together (user + system), or null without GNU time. */
  cpuSeconds: number | null;
}

const GNU_TIME = '/usr/bin/time';
/** How tesseract is run at scale: one thread per process, the cores shared out by running a process per core. */
export const TESSERACT_ENV = { OMP_THREAD_LIMIT: '1' } as const;

/** Every page through tesseract, `processes` (default: the cores) single-threaded processes at once, timed as a whole. */
export async function runTesseractPool(
  pages: readonly { imagePath: string; language: string }[],
  options: { boxes?: boolean; processes?: number } = {},
): Promise<TesseractPool> {
  const processes = Math.max(1, options.processes ?? os.availableParallelism());
  const started = performance.now();
  let firstDoneMs = Number.POSITIVE_INFINITY;
  const runs = await mapPool(pages, processes, async (page) => {
    const run = await runTesseract(page.imagePath, page.language, { boxes: options.boxes ?? false });
    firstDoneMs = Math.min(firstDoneMs, performance.now() - started);
    return run;
  });
  const wallMs = performance.now() - started;
  const peaks = runs.map((run) => run.peakBytes).filter((peak): peak is number => peak !== null);
  const cpu = runs.map((run) => run.cpuSeconds);
  return {
    runs,
    processes,
    wallMs,
    firstDoneMs: Number.isFinite(firstDoneMs) ? firstDoneMs : 0,
    pagesPerSecond: pages.length / Math.max(1e-9, wallMs / 1000),
    peakBytes: peaks.length > 0 ? Math.max(...peaks) : null,
    cpuSeconds: cpu.every((seconds) => seconds !== null) ? cpu.reduce((sum: number, seconds) => sum + (seconds as number), 0) : null,
  };
}

export async function tesseractVersion(): Promise<string | null> {
  try {
    const { stdout, stderr } = await capture('tesseract', ['--version'], {});
    return (stdout || stderr).split('\n')[0].trim() || null;
  } catch {
    return null;
  }
}

async function runTesseract(imagePath: string, language: string, options: { boxes?: boolean } = {}): Promise<TesseractRun> {
  const timed = existsSync(GNU_TIME);
  const command = timed ? GNU_TIME : 'tesseract';
  const args = [...(timed ? ['-f', GNU_TIME_FORMAT, 'tesseract'] : []), imagePath, '-', '-l', language, ...(options.boxes ? ['tsv'] : [])];
  const started = performance.now();
  const { stdout, stderr, code } = await capture(command, args, TESSERACT_ENV);
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`tesseract failed on ${imagePath} (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
  const { peakBytes, cpuSeconds } = gnuTimeFigures(stderr);
  if (options.boxes) return { ...linesFromTsv(stdout), ms, peakBytes, cpuSeconds };
  return {
    lines: stdout
      .replace(/\f/g, '')
      .split('\n')
      .filter((line) => line.trim() !== ''),
    ms,
    peakBytes,
    cpuSeconds,
  };
}

/** GNU time's report as GNU_TIME_FORMAT asks for it: the peak resident memory and the CPU time. */
export const GNU_TIME_FORMAT = '@@peak %M @@cpu %U %S';

export function gnuTimeFigures(stderr: string): { peakBytes: number | null; cpuSeconds: number | null } {
  const peak = /@@peak (\d+)/.exec(stderr);
  const cpu = /@@cpu ([\d.]+) ([\d.]+)/.exec(stderr);
  return { peakBytes: peak ? Number(peak[1]) * 1024 : null, cpuSeconds: cpu ? Number(cpu[1]) + Number(cpu[2]) : null };
}

/** Each line's box (`{ boxes: true }`) as a four-corner outline, for the line-coverage measure. */
export function boxOutlines(run: TesseractRun): Point[][] {
  return (run.boxes ?? []).map(([x, y, w, h]): Point[] => [
    [x, y],
    [x + w, y],
    [x + w, y + h],
    [x, y + h],
  ]);
}

/** Lines of tesseract's TSV output (level 4 rows give the boxes, level 5 the words), empty lines dropped. */
function linesFromTsv(tsv: string): { lines: string[]; boxes: [number, number, number, number][] } {
  const lines = new Map<string, { box: [number, number, number, number]; words: string[] }>();
  for (const row of tsv.split('\n').slice(1)) {
    const cells = row.split('\t');
    if (cells.length < 12) continue;
    const [level, , block, paragraph, line] = cells;
    const key = `${block}/${paragraph}/${line}`;
    const box = cells.slice(6, 10).map(Number) as [number, number, number, number];
    if (level === '4') lines.set(key, { box, words: [] });
    else if (level === '5' && cells[11].trim() !== '') lines.get(key)?.words.push(cells[11].trim());
  }
  const kept = [...lines.values()].filter((line) => line.words.length > 0);
  return { lines: kept.map((line) => line.words.join(' ')), boxes: kept.map((line) => line.box) };
}

export function capture(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}
