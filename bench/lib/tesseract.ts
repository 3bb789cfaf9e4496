// The peer tool: Debian's tesseract-ocr, run as a command on a page image, timed,
// with its peak memory taken from GNU time when /usr/bin/time is there.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface TesseractRun {
  lines: string[];
  ms: number;
  /** Peak resident memory in bytes, or null when GNU time is not installed. */
  peakBytes: number | null;
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

export async function runTesseract(imagePath: string, language: string): Promise<TesseractRun> {
  const timed = existsSync(GNU_TIME);
  const command = timed ? GNU_TIME : 'tesseract';
  const args = [...(timed ? ['-f', '@@peak %M', 'tesseract'] : []), imagePath, '-', '-l', language];
  const started = performance.now();
  const { stdout, stderr, code } = await capture(command, args);
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`tesseract failed on ${imagePath} (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
  const peak = /@@peak (\d+)/.exec(stderr);
  return {
    lines: stdout.replace(/\f/g, '').split('\n').filter((line) => line.trim() !== ''),
    ms,
    peakBytes: peak ? Number(peak[1]) * 1024 : null,
  };
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
