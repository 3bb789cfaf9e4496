// The trainer's input (train/finetune.py --lines): each line cut by line-crops.ts, written as an
// 8-bit grey PNG at the model's height under `lines/<page>/`, and `lines.jsonl` beside them, one
// JSON object a line:
//   {"id": "PAGE/LINE_ID", "image": "lines/PAGE/0001.png", "text": "...", "page": "PAGE", "split": "train"|"val"}
// (`image` relative to the file's folder; `split` where the writer chose the held-out lines).
// Written by the trainer role (src/pipeline/training) and by train/cut_lines.ts.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import type { RgbImage } from '../image/raster.ts';
import { type CropSpec, cutTrainingLines, type GroundTruthLine, greyLevels } from './line-crops.ts';

export interface TrainingLineRow {
  id: string;
  image: string;
  text: string;
  page: string;
  split?: 'train' | 'val';
}

/** The file the trainer reads, in `out`. */
export const LINES_FILE = 'lines.jsonl';

/**
 * Cuts a page's lines (already checked: text, geometry) and writes their images under `out`;
 * returns their rows, in the order given. `heldOut[i]` marks line i for validation, where given.
 */
export async function writePageLines(
  out: string,
  pageName: string,
  image: RgbImage,
  lines: readonly GroundTruthLine[],
  spec: CropSpec,
  heldOut?: readonly boolean[],
): Promise<TrainingLineRow[]> {
  const folder = path.join('lines', pageName.replace(/[^A-Za-z0-9_.-]/g, '_'));
  mkdirSync(path.join(out, folder), { recursive: true });
  const rows: TrainingLineRow[] = [];
  for (const [index, { id, text, crop }] of cutTrainingLines(image, lines, spec).entries()) {
    const file = path.join(folder, `${String(index + 1).padStart(4, '0')}.png`);
    await sharp(Buffer.from(greyLevels(crop)), { raw: { width: crop.width, height: crop.height, channels: 1 } })
      .png()
      .toFile(path.join(out, file));
    const split = heldOut ? { split: heldOut[index] ? ('val' as const) : ('train' as const) } : {};
    rows.push({ id: `${pageName}/${id}`, image: file, text, page: pageName, ...split });
  }
  return rows;
}

/** Writes `lines.jsonl` into `out`; returns its path. */
export function writeLinesFile(out: string, rows: readonly TrainingLineRow[]): string {
  const file = path.join(out, LINES_FILE);
  writeFileSync(file, rows.length > 0 ? `${rows.map((row) => JSON.stringify(row)).join('\n')}\n` : '');
  return file;
}
