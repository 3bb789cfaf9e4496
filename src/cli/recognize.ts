// `hwr recognize IMAGE... [--json] [--layout-only]`: layout and recognition on local
// images, without a database. Text output: each page's lines in reading order;
// --json: one page result (the page model) per line of output.
// `hwr recognize IMAGE --layout FILE.xml`: the page's own layout (PageXML or ALTO) instead of
// detection, as in a scan ZIP (docs/intake.md, "Bring your own layout").
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../platform/config.ts';
import { isPipelineError } from '../recognition/page/errors.ts';
import { isLayoutError } from '../recognition/layout/uploaded-layout.ts';
import { pageText } from '../recognition/page/page-result.ts';
import { recognizePage } from '../recognition/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../pipeline/shared-engine.ts';

const USAGE = `usage: hwr recognize IMAGE... [--json] [--layout-only]
       hwr recognize IMAGE --layout FILE.xml [--json]

  --json         print one page result (JSON, the page model) per image, one per line
  --layout-only  detect lines and reading order only (lines get empty text)
  --layout FILE  the page's own layout (PageXML 2013/2019 or ALTO v2-v4): its regions, lines
                 and reading order are kept, only recognition runs (one image)

Models: the default setup (models/default: our segmenter and handwriting recognizer, with PP-OCRv4
screening printed lines and our print reader reading the pages surely printed), or the model
directory in MODEL_DIR (docs/recognition.md).`;

export async function run(argv: string[]): Promise<number> {
  const args: string[] = [];
  let layoutFile: string | null = null;
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    if (arg === '--layout' || arg.startsWith('--layout=')) {
      const value = arg === '--layout' ? argv[(index += 1)] : arg.slice('--layout='.length);
      if (!value || layoutFile !== null) {
        process.stderr.write(`${value ? '--layout given twice' : '--layout needs a file'}\n${USAGE}\n`);
        return 2;
      }
      layoutFile = value;
    } else {
      args.push(arg);
    }
  }
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
  if (layoutFile !== null && (images.length !== 1 || flags.has('--layout-only'))) {
    process.stderr.write(`--layout takes one image${flags.has('--layout-only') ? ' and no --layout-only' : ''}\n${USAGE}\n`);
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
        const layoutXml = layoutFile === null ? undefined : await readFile(layoutFile);
        const { page, timings } = await recognizePage(engine, bytes, {
          name: path.basename(image),
          pageNumber: index + 1,
          maxPixels: config.limits.maxImagePixels,
          recognize: !flags.has('--layout-only'),
          ...(layoutXml ? { layoutXml } : {}),
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
        const detail = isPipelineError(error)
          ? `[${error.code}] ${error.message}`
          : isLayoutError(error)
            ? `[${error.code}] ${layoutFile}: ${error.message}`
            : (error as Error).message;
        process.stderr.write(`hwr recognize: ${image}: ${detail}\n`);
      }
    }
  } finally {
    await closeSharedEngines();
  }
  return failures > 0 ? 1 : 0;
}
