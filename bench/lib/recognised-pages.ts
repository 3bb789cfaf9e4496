// The val pages of ../shared/datasets/htr-pages read once by the configured setup (our layout, our
// recognizers, the configured decoder) and kept on disk with each line's output frames, so that
// the correction evaluations (bench/correction-guards.ts) can run many correctors over the same
// readings: PAGE.page.json (the PageResult), PAGE.frames.bin (Float32 frames of every line, one
// after the other) and PAGE.frames.json (line id, steps, offset; the recognizer's classes).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/platform/config.ts';
import type { LineFrames } from '../../src/recognition/decoding/ctc-score.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import type { CharacterClasses } from '../../src/recognition/models/charset.ts';
import { defaultModelSpec } from '../../src/recognition/models/default-model.ts';
import { loadModelSpec } from '../../src/recognition/models/model-manifest.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { recognizePage } from '../../src/recognition/recognize-page.ts';
import type { EvalPage } from './htr-pages.ts';

export interface RecognisedPage {
  name: string;
  /** `source:document` of the page (the unit the tune/held-out halves are split by). */
  document: string;
  page: PageResult;
  lineFrames: Map<string, LineFrames>;
  /** Ground-truth lines in reading order. */
  groundTruth: string[];
  imagePath: string;
  /** Recognition time when it was read (ms). */
  ms: number;
}

interface FramesIndex {
  classes: Pick<CharacterClasses, 'symbols' | 'blank' | 'space'>;
  logits: boolean;
  lines: { id: string; steps: number; offset: number }[];
  ms: number;
  setup: string;
}

/**
 * Reads the pages not yet in `cacheDir` (each written as soon as it is read) and returns them all;
 * by the configured setup (MODEL_DIR, else the default) or the one in `modelDir`.
 */
export async function recognisedPages(
  pages: readonly EvalPage[],
  cacheDir: string,
  progress: (message: string) => void,
  modelDir: string | null = null,
): Promise<RecognisedPage[]> {
  mkdirSync(cacheDir, { recursive: true });
  const missing = pages.filter((page) => !existsSync(path.join(cacheDir, `${page.name}.frames.json`)));
  if (missing.length > 0) {
    const config = loadConfig();
    const chosenDir = modelDir ?? config.recognition.modelDir;
    const spec = chosenDir ? loadModelSpec(chosenDir) : defaultModelSpec();
    const engine = await OcrEngine.load(spec, {
      threads: config.recognition.threads,
      concurrency: config.recognition.concurrency,
      decoder: config.recognition.decoder,
    });
    const setup = `${spec.name} ${spec.version}, decoder ${engine.decoders.main}`;
    try {
      for (const [index, page] of missing.entries()) {
        const started = performance.now();
        const read = await recognizePage(engine, readFileSync(page.imagePath), {
          name: path.basename(page.imagePath),
          pageNumber: 1,
          maxPixels: config.limits.maxImagePixels,
          recognize: true,
        });
        const ms = performance.now() - started;
        writeCached(cacheDir, page.name, read.page, read.lineFrames, ms, setup);
        progress(`read ${index + 1}/${missing.length} ${page.name} (${(ms / 1000).toFixed(1)} s)`);
      }
    } finally {
      await engine.close();
    }
  }
  return pages.map((page) => {
    const cached = readCached(cacheDir, page.name);
    return {
      name: page.name,
      document: page.document ?? page.name,
      page: cached.page,
      lineFrames: cached.lineFrames,
      groundTruth: page.truth.regions.flatMap((region) => region.lines.map((line) => line.text)),
      imagePath: page.imagePath,
      ms: cached.ms,
    };
  });
}

function writeCached(dir: string, name: string, page: PageResult, frames: Map<string, LineFrames>, ms: number, setup: string): void {
  const entries = [...frames];
  const classes = entries[0]?.[1].classes ?? { symbols: [], blank: 0, space: -1 };
  const lines: FramesIndex['lines'] = [];
  let offset = 0;
  for (const [id, line] of entries) {
    lines.push({ id, steps: line.steps, offset });
    offset += line.scores.length;
  }
  const all = new Float32Array(offset);
  for (const [index, [, line]] of entries.entries()) all.set(line.scores, lines[index].offset);
  const index: FramesIndex = {
    classes: { symbols: classes.symbols, blank: classes.blank, space: classes.space },
    logits: entries[0]?.[1].logits ?? true,
    lines,
    ms,
    setup,
  };
  writeFileSync(path.join(dir, `${name}.page.json`), JSON.stringify(page));
  writeFileSync(path.join(dir, `${name}.frames.bin`), Buffer.from(all.buffer));
  writeFileSync(path.join(dir, `${name}.frames.json`), JSON.stringify(index));
}

function readCached(dir: string, name: string): { page: PageResult; lineFrames: Map<string, LineFrames>; ms: number } {
  const index = JSON.parse(readFileSync(path.join(dir, `${name}.frames.json`), 'utf8')) as FramesIndex;
  const bytes = readFileSync(path.join(dir, `${name}.frames.bin`));
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const classes: CharacterClasses = { ...index.classes, allowed: null };
  const count = classes.symbols.length;
  const lineFrames = new Map<string, LineFrames>(
    index.lines.map((line) => [
      line.id,
      { scores: all.subarray(line.offset, line.offset + line.steps * count), steps: line.steps, logits: index.logits, classes },
    ]),
  );
  return { page: JSON.parse(readFileSync(path.join(dir, `${name}.page.json`), 'utf8')) as PageResult, lineFrames, ms: index.ms };
}
