// Ground-truth pages in, the trainer's lines out (train/finetune.py): each line cut by the
// service's own code exactly as the recognizer reads it when a job brings that page's layout
// (src/recognition/training/line-crops.ts), written as an 8-bit grey PNG at the model's height,
// with `lines.jsonl` beside them, one JSON object a line:
//   {"id": "PAGE/LINE_ID", "image": "lines/PAGE/0001.png", "text": "...", "page": "PAGE"}
// (`image` relative to the jsonl's folder; `"split": "train"|"val"` where --val-pages names pages).
// Line text as the service takes ground truth (src/intake/ground-truth-text.ts: NFC, white space
// folded, invisible formatting removed); lines without text, too small to read or with characters
// no model can learn are skipped and counted.
//
//   node train/cut_lines.ts --model models/hwr-htr-v3 --out DIR  PAGES_DIR_OR_IMAGE...
//   node train/cut_lines.ts --model models/hwr-htr-v3 --out DIR  --htr-pages ../shared/datasets/htr-pages \
//        --split val --pages hooker_JDH_2_16_85_001,hooker_JDH_2_16_85_002
//
// A PAGES_DIR holds images with their PageXML or ALTO files: NAME.xml, NAME.alto.xml, page/NAME.xml
// (Transkribus' export) or alto/NAME.xml beside NAME.jpg (png, tif, webp, jp2); an IMAGE argument is
// one such image. --htr-pages reads the JSON ground truth of the shared page dataset (--pages: page
// names, or --document SOURCE:DOCUMENT: its pages). --model is the recognizer the lines are cut for
// (its manifest's inputHeight, cropHeightScale, readWholeLines; a setup such as models/default
// names its recognizer's). Prints a JSON summary on stdout.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { normaliseLineText, tooSmallToRead } from '../src/intake/ground-truth-text.ts';
import { prepareImage } from '../src/recognition/image/prepare-image.ts';
import { parseUploadedLayout, type UploadedLine } from '../src/recognition/layout/uploaded-layout.ts';
import { loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import { type TrainingLineRow, writeLinesFile, writePageLines } from '../src/recognition/training/training-lines-file.ts';
import { compareNatural } from '../src/shared/natural-sort.ts';
import { pagesFromDataset } from '../bench/lib/htr-pages.ts';

const IMAGE = /\.(jpe?g|png|tiff?|webp|jp2|j2k)$/i;

interface SourcePage {
  name: string;
  image: Buffer;
  /** The lines as read against the decoded image (reading order). */
  lines: (raster: { width: number; height: number }) => UploadedLine[];
}

export interface CutSummary {
  pages: number;
  lines: number;
  characters: number;
  skipped: Record<'no_text' | 'too_small' | 'unlearnable' | 'no_geometry', number>;
  out: string;
}

/** Image + PageXML/ALTO pairs of a folder (or the pair of one image). */
function pagesOfPath(entry: string): SourcePage[] {
  const images = statSync(entry).isFile() ? [entry] : [];
  const folder = images.length > 0 ? path.dirname(entry) : entry;
  const files =
    images.length > 0
      ? images
      : readdirSync(folder)
          .filter((file) => IMAGE.test(file))
          .sort(compareNatural)
          .map((file) => path.join(folder, file));
  const pages: SourcePage[] = [];
  for (const image of files) {
    const stem = path.basename(image).replace(/\.[^.]+$/, '');
    const xml = [`${stem}.xml`, `${stem}.alto.xml`, `page/${stem}.xml`, `alto/${stem}.xml`]
      .map((name) => path.join(folder, name))
      .find((candidate) => existsSync(candidate));
    if (!xml) {
      process.stderr.write(`cut_lines: ${image} has no PageXML or ALTO file beside it; left out\n`);
      continue;
    }
    const bytes = readFileSync(xml);
    pages.push({
      name: stem,
      image: readFileSync(image),
      lines: (raster) => parseUploadedLayout(bytes, raster, { outsideImage: 'skip' }).regions.flatMap((region) => region.lines),
    });
  }
  if (pages.length === 0) throw new Error(`${entry}: no image with its PageXML or ALTO file`);
  return pages;
}

/** Pages of ../shared/datasets/htr-pages by name or by document. */
function pagesOfDataset(dataset: string, split: string, names: string[] | null, document: string | null): SourcePage[] {
  const scratch = path.join(os.tmpdir(), `hwr-cut-lines-${process.pid}`);
  const all = pagesFromDataset(dataset, split, scratch);
  process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
  const byName = new Map(all.map((page) => [page.name, page]));
  const chosen = names
    ? names.map((name) => {
        const page = byName.get(name);
        if (!page) throw new Error(`${dataset} (${split}) has no page ${name}`);
        return page;
      })
    : all.filter((page) => documentOf(dataset, split, page.name) === document).sort((a, b) => compareNatural(a.name, b.name));
  if (chosen.length === 0) throw new Error(`${dataset} (${split}): no page of ${document}`);
  return chosen.map((page) => ({
    name: page.name,
    image: readFileSync(page.imagePath),
    lines: () => page.truth.regions.flatMap((region) => region.lines),
  }));
}

let documents: Map<string, string> | null = null;
function documentOf(dataset: string, split: string, page: string): string | undefined {
  if (!documents) {
    const [header, ...rows] = readFileSync(path.join(dataset, 'pages.tsv'), 'utf8').trim().split('\n');
    const columns = header.split('\t');
    documents = new Map(
      rows
        .map((row) => row.split('\t'))
        .filter((cells) => cells[columns.indexOf('split')] === split)
        .map((cells) => [cells[columns.indexOf('page')], cells[columns.indexOf('hand_or_document')]]),
    );
  }
  return documents.get(page);
}

export async function cutLines(
  pages: SourcePage[],
  modelDir: string,
  out: string,
  validationPages: ReadonlySet<string> = new Set(),
): Promise<CutSummary> {
  const spec = loadModelSpec(modelDir).recognition;
  mkdirSync(out, { recursive: true });
  const rows: TrainingLineRow[] = [];
  const skipped: CutSummary['skipped'] = { no_text: 0, too_small: 0, unlearnable: 0, no_geometry: 0 };
  let characters = 0;
  for (const page of pages) {
    const { raster } = await prepareImage(page.image, { name: page.name, maxPixels: 200_000_000 });
    const usable: UploadedLine[] = [];
    for (const line of page.lines(raster)) {
      const { text, unlearnable } = normaliseLineText(line.text);
      if (line.polygon.length < 3) skipped.no_geometry += 1;
      else if (text === '') skipped.no_text += 1;
      else if (unlearnable.length > 0) skipped.unlearnable += 1;
      else if (tooSmallToRead(line.polygon, text) !== null) skipped.too_small += 1;
      else usable.push({ ...line, text });
    }
    const heldOut = validationPages.size > 0 ? usable.map(() => validationPages.has(page.name)) : undefined;
    const written = await writePageLines(out, page.name, raster, usable, spec, heldOut);
    rows.push(...written);
    characters += written.reduce((sum, row) => sum + [...row.text].length, 0);
  }
  return { pages: pages.length, lines: rows.length, characters, skipped, out: writeLinesFile(out, rows) };
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      model: { type: 'string', default: path.resolve(import.meta.dirname, '../models/hwr-htr-v3') },
      out: { type: 'string' },
      'htr-pages': { type: 'string' },
      split: { type: 'string', default: 'val' },
      pages: { type: 'string' },
      document: { type: 'string' },
      'val-pages': { type: 'string' },
    },
  });
  if (!values.out) throw new Error('--out DIR is required');
  const pages = values['htr-pages']
    ? pagesOfDataset(values['htr-pages'], values.split, values.pages ? values.pages.split(',') : null, values.document ?? null)
    : positionals.flatMap(pagesOfPath);
  if (pages.length === 0) throw new Error('no pages: give folders or images, or --htr-pages with --pages or --document');
  const summary = await cutLines(pages, values.model, values.out, new Set(values['val-pages']?.split(',') ?? []));
  console.log(JSON.stringify(summary));
  return summary.lines > 0 ? 0 : 1;
}

if (import.meta.main) process.exitCode = await main();
