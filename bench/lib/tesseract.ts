// The peer tool: Debian's tesseract-ocr, run as a command on a page image, timed,
// with its peak memory taken from GNU time when /usr/bin/time is there.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Point } from '../../src/recognition/page/page-result.ts';

export interface TesseractRun {
  lines: string[];
  ms: number;
  /** Peak resident memory in bytes, or null when GNU time is not installed. */
  peakBytes: number | null;
  /** With `{ boxes: true }`: each line's box (x, y, width, height in pixels), parallel to `lines`. */
  boxes?: [number, number, number, number][];
}

const GNU_TIME = '/usr/bin/time';

export async function tesseractVersion(): Promise<string | null> {
  try {
    const { stdout, stderr } = await capture('tesseract', ['--version']);
    return (stdout || stderr).split('\n')[0].trim() || null;
  } catch {
    return null;
  }
}

export async function runTesseract(imagePath: string, language: string, options: { boxes?: boolean } = {}): Promise<TesseractRun> {
  const timed = existsSync(GNU_TIME);
  const command = timed ? GNU_TIME : 'tesseract';
  const args = [...(timed ? ['-f', '@@peak %M', 'tesseract'] : []), imagePath, '-', '-l', language, ...(options.boxes ? ['tsv'] : [])];
  const started = performance.now();
  const { stdout, stderr, code } = await capture(command, args);
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`tesseract failed on ${imagePath} (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
  const peak = /@@peak (\d+)/.exec(stderr);
  if (options.boxes) return { ...linesFromTsv(stdout), ms, peakBytes: peak ? Number(peak[1]) * 1024 : null };
  return {
    lines: stdout
      .replace(/\f/g, '')
      .split('\n')
      .filter((line) => line.trim() !== ''),
    ms,
    peakBytes: peak ? Number(peak[1]) * 1024 : null,
  };
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

function capture(command: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}
