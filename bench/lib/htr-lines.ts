// The validation lines of ../shared/datasets/htr-lines (val.tsv + val-000.tar), for
// benchmarks that measure recognizers on lines no fixture page contains.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import type { RecognitionSpec } from '../../src/recognition/models/model-spec.ts';
import { framesCovering } from '../../src/recognition/reading/text-recognizer.ts';

export const DEFAULT_DATASET_DIR = path.resolve(import.meta.dirname, '../../../shared/datasets/htr-lines');

export interface DatasetLine {
  /** Member of the tar, e.g. `val-000/000123.jpg`. */
  file: string;
  /** The `text_norm` column (NFC). */
  text: string;
  lang: string;
  /** `source:document`. */
  document: string;
  /** The page the line was cut from (`source_page`). */
  page: string;
  /** Handwritten unless the ground truth types it `Typewritten` or `Print` (Stanford letters). */
  kind: 'handwritten' | 'printed';
}

export function readValidationLines(dataset: string = DEFAULT_DATASET_DIR): DatasetLine[] {
  const [header, ...rows] = readFileSync(path.join(dataset, 'val.tsv'), 'utf8')
    .split('\n')
    .filter((row) => row !== '');
  const columns = header.split('\t');
  const at = (name: string): number => {
    const index = columns.indexOf(name);
    if (index < 0) throw new Error(`val.tsv has no column ${name}`);
    return index;
  };
  return rows
    .map((row) => row.split('\t'))
    .map((cells) => ({
      file: cells[at('file')],
      text: cells[at('text_norm')].normalize('NFC').trim(),
      lang: cells[at('lang')],
      document: cells[at('hand_or_document')],
      page: `${cells[at('source_repo')]}/${cells[at('source_page')]}`,
      kind: /Typewritten|Print/.test(cells[at('line_type')] ?? '') ? ('printed' as const) : ('handwritten' as const),
    }))
    .filter((line) => line.text !== '');
}

/** Members of an uncompressed USTAR archive by name. */
export function readTar(file: string): Map<string, Buffer> {
  const tar = readFileSync(file);
  const members = new Map<string, Buffer>();
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    if (name === '') break;
    const prefix = header.subarray(345, 500).toString('utf8').replace(/\0.*$/s, '');
    const size = Number.parseInt(header.subarray(124, 136).toString('utf8').replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(header[156]);
    if (type === '0' || type === '\0') members.set(prefix ? `${prefix}/${name}` : name, tar.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return members;
}

/** A line's model input: `width` columns, the line's own `contentWidth` first, then the model's trailing padding. */
export interface LineInput {
  data: Float32Array;
  width: number;
  contentWidth: number;
}

/**
 * 64 px grey JPEG -> normalised 32 px input (2x2 mean, as the training's area resize), followed by the
 * manifest's `trailingPadding` of white, as the service pads every line it reads.
 */
export async function modelInput(
  jpeg: Buffer,
  rec: Pick<RecognitionSpec, 'inputHeight' | 'mean' | 'std' | 'trailingPadding'>,
): Promise<LineInput> {
  const height = rec.inputHeight;
  const mean = rec.mean[0];
  const std = rec.std[0];
  const { data, info } = await sharp(jpeg).greyscale().raw().toBuffer({ resolveWithObject: true });
  const factor = info.height / height;
  if (!Number.isInteger(factor)) throw new Error(`line height ${info.height} is not a multiple of ${height}`);
  const contentWidth = Math.max(16, Math.round(info.width / factor));
  const width = contentWidth + rec.trailingPadding;
  const out = new Float32Array(height * width).fill((1 - mean) / std);
  const columns = Math.floor(info.width / factor);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < columns; x += 1) {
      let sum = 0;
      for (let dy = 0; dy < factor; dy += 1)
        for (let dx = 0; dx < factor; dx += 1) sum += data[(y * factor + dy) * info.width + x * factor + dx];
      out[y * width + x] = (sum / (factor * factor) / 255 - mean) / std;
    }
  }
  return { data: out, width, contentWidth };
}

/** The frames of a model's output for `input` that cover the line itself, as the service decodes them. */
export function lineSteps(input: LineInput, steps: number): number {
  return framesCovering(input.contentWidth, input.width / steps, steps);
}
