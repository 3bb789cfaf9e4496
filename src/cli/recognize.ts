// `hwr recognize IMAGE... [--json] [--layout-only]`: layout and recognition on local
// images, without a database. Text output: each page's lines in reading order;
// --json: one page result (the page model) per line of output.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../config.ts';
import { isPipelineError } from '../pipeline/errors.ts';
import { pageText } from '../pipeline/page-result.ts';
import { recognizePage } from '../pipeline/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../pipeline/shared-engine.ts';

const USAGE = `usage: hwr recognize IMAGE... [--json] [--layout-only]

  --json         print one page result (JSON, the page model) per image, one per line
  --layout-only  detect lines and reading order only (lines get empty text)

Models: the built-in PP-OCRv4, or the model directory in MODEL_DIR (docs/recognition.md).`;

export async function run(args: string[]): Promise<number> {
  const flags = new Set(args.filter((arg) => arg.startsWith('-')));
  const images = args.filter((arg) => !arg.startsWith('-'));
  const unknown = [...flags].filter((flag) => !['--json', '--layout-only', '--help', '-h'].includes(flag));
  if (flags.has('--help') || flags.has('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (unknown.length > 0 || images.length === 0) {
    process.stderr.write(`${unknown.length > 0 ? `unknown option ${unknown[0]}\n` : ''}${USAGE}\n`);
    return 2;
  }
  const json = flags.has('--json');
  const config = loadConfig();
  let failures = 0;
  try {
    const engine = await sharedEngine(config.recognition);
    for (const [index, image] of images.entries()) {
      try {
        const bytes = await readFile(image);
        const { page, timings } = await recognizePage(engine, bytes, {
          name: path.basename(image),
          pageNumber: index + 1,
          maxPixels: config.limits.maxImagePixels,
          recognize: !flags.has('--layout-only'),
        });
        if (json) {
          process.stdout.write(`${JSON.stringify(page)}\n`);
        } else {
          const lines = page.regions.reduce((sum, region) => sum + region.lines.length, 0);
          const ms = timings.decodeMs + timings.detectionMs + timings.recognitionMs;
          process.stdout.write(`== ${image} (${page.image.width}x${page.image.height}, ${lines} lines, ${Math.round(ms)} ms)\n`);
          for (const warning of page.warnings) process.stdout.write(`warning: ${warning}\n`);
          process.stdout.write(`${pageText(page)}\n`);
        }
      } catch (error) {
        failures += 1;
        const detail = isPipelineError(error) ? `[${error.code}] ${error.message}` : (error as Error).message;
        process.stderr.write(`hwr recognize: ${image}: ${detail}\n`);
      }
    }
  } finally {
    await closeSharedEngines();
  }
  return failures > 0 ? 1 : 0;
}
