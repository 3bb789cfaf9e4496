// The end-to-end peer for a searchable PDF/A (issue 43): Debian's ocrmypdf on the same pages
// as one PDF (img2pdf wraps the images without re-encoding), `--jobs` = the cores (it runs one
// single-threaded tesseract per job), `--output-type pdfa-2`, the pages' languages.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { capture, GNU_TIME_FORMAT, gnuTimeFigures, TESSERACT_ENV } from './tesseract.ts';

export interface OcrmypdfRun {
  /** Wall time of img2pdf (the pages into one PDF) and of ocrmypdf, in ms. */
  img2pdfMs: number;
  ocrmypdfMs: number;
  jobs: number;
  /** Tesseract's languages as given to `-l` (the pages' languages joined by `+`, most pages first). */
  languages: string;
  /** The largest one process's peak resident memory (GNU time), in bytes, or null. */
  peakBytes: number | null;
  /** CPU seconds of ocrmypdf and every process it ran (GNU time: user + system), or null. */
  cpuSeconds: number | null;
  outputBytes: number;
}

/**
 * The peer's name and version, or why it cannot run: ocrmypdf, or img2pdf (which wraps the pages as
 * one PDF for it; Debian packages it apart from ocrmypdf), not installed.
 */
export async function ocrmypdfPeer(): Promise<{ version: string } | { missing: string }> {
  const ocrmypdf = await versionOf('ocrmypdf');
  if (ocrmypdf === null) return { missing: 'no ocrmypdf' };
  if ((await versionOf('img2pdf')) === null)
    return { missing: 'no img2pdf (Debian: img2pdf), which the OCRmyPDF peer needs: OCRmyPDF not run' };
  return { version: `ocrmypdf ${ocrmypdf}` };
}

async function versionOf(command: string): Promise<string | null> {
  try {
    const { stdout, code } = await capture(command, ['--version'], {});
    return code === 0 ? stdout.trim() : null;
  } catch {
    return null;
  }
}

/** The pages as one PDF through ocrmypdf; throws when either tool fails. */
export async function runOcrmypdf(
  pages: readonly { imagePath: string; language: string }[],
  options: { jobs?: number } = {},
): Promise<OcrmypdfRun> {
  const jobs = Math.max(1, options.jobs ?? os.availableParallelism());
  const counts = new Map<string, number>();
  for (const page of pages) counts.set(page.language, (counts.get(page.language) ?? 0) + 1);
  const languages = [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([language]) => language)
    .join('+');
  const directory = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-ocrmypdf-'));
  try {
    const input = path.join(directory, 'pages.pdf');
    const output = path.join(directory, 'pages.ocr.pdf');
    let started = performance.now();
    const wrapped = await capture('img2pdf', [...pages.map((page) => page.imagePath), '-o', input], {});
    const img2pdfMs = performance.now() - started;
    if (wrapped.code !== 0) throw new Error(`img2pdf failed (exit ${wrapped.code}): ${lastLines(wrapped.stderr)}`);
    const timed = existsSync('/usr/bin/time');
    const args = ['--jobs', String(jobs), '--output-type', 'pdfa-2', '-l', languages, input, output];
    started = performance.now();
    const run = await capture(
      timed ? '/usr/bin/time' : 'ocrmypdf',
      [...(timed ? ['-f', GNU_TIME_FORMAT, 'ocrmypdf'] : []), ...args],
      TESSERACT_ENV,
    );
    const ocrmypdfMs = performance.now() - started;
    if (run.code !== 0) throw new Error(`ocrmypdf failed (exit ${run.code}): ${lastLines(run.stderr)}`);
    const { peakBytes, cpuSeconds } = gnuTimeFigures(run.stderr);
    return {
      img2pdfMs,
      ocrmypdfMs,
      jobs,
      languages,
      peakBytes,
      cpuSeconds,
      outputBytes: (await stat(output)).size,
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

const lastLines = (text: string): string => text.trim().split('\n').slice(-3).join(' ');
