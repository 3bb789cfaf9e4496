// The pages of ../shared/datasets/htr-pages (its README): JSON ground truth and JPEG images in
// tar shards per split, read as pages with their ground truth as an uploaded layout.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { UploadedLayout } from '../../src/recognition/layout/uploaded-layout.ts';
import { readTar } from './htr-lines.ts';

export const DEFAULT_HTR_PAGES = path.resolve(import.meta.dirname, '../../../shared/datasets/htr-pages');
const TESSERACT_LANGUAGES: Record<string, string> = { en: 'eng', fr: 'fra', de: 'deu' };

export interface EvalPage {
  name: string;
  source: string;
  /** `source:document` (htr-pages' hand_or_document; its unit of splits), where known. */
  document?: string;
  /** Tesseract language code. */
  language: string;
  imagePath: string;
  width: number;
  height: number;
  /** Ground truth as an uploaded layout (regions and lines in reading order, with text). */
  truth: UploadedLayout;
}

/** The htr-pages split: JSON ground truth and JPEG images from the tars (images written to `imageDir` for tesseract). */
export function pagesFromDataset(dataset: string, split: string, imageDir: string): EvalPage[] {
  mkdirSync(imageDir, { recursive: true });
  const shards = readdirSync(dataset)
    .filter((file) => file.startsWith(`${split}-`) && file.endsWith('.tar'))
    .sort();
  if (shards.length === 0) throw new Error(`no ${split}-*.tar in ${dataset} (see its README.md)`);
  const pages: EvalPage[] = [];
  for (const shard of shards) {
    const members = readTar(path.join(dataset, shard));
    for (const [name, bytes] of members) {
      if (!name.endsWith('.json')) continue;
      const json = JSON.parse(bytes.toString('utf8')) as HtrPage;
      const image = members.get(name.replace(/\.json$/, '.jpg'));
      if (!image) throw new Error(`${shard}: ${name} has no image`);
      const imagePath = path.join(imageDir, `${json.page}.jpg`);
      writeFileSync(imagePath, image);
      pages.push({
        name: json.page,
        source: json.page.split('_')[0],
        document: json.hand_or_document,
        language: TESSERACT_LANGUAGES[json.lang] ?? 'eng',
        imagePath,
        width: json.width,
        height: json.height,
        truth: truthFromJson(json),
      });
    }
  }
  return pages;
}

interface HtrPage {
  page: string;
  hand_or_document: string;
  lang: string;
  width: number;
  height: number;
  regions: { id: string; type: string | null; polygon: [number, number][] | null }[];
  lines: { id: string; region_id: string; baseline: [number, number][] | null; polygon: [number, number][] | null; text: string }[];
}

/**
 * How many of a page's ground-truth lines (their texts, as `truth` holds them: every line drawn with a
 * polygon) are left without text: a transcription with gaps, such as htr-pages' faded peraire page,
 * where the nearest ground-truth line is not a line's whole text (ADR 0050).
 */
export function untranscribedLines(texts: readonly string[]): number {
  return texts.filter((text) => text.trim() === '').length;
}

/** Lines in the dataset's reading order, grouped by region as they come (a region met again starts a new group). */
function truthFromJson(page: HtrPage): UploadedLayout {
  const regions: UploadedLayout['regions'] = [];
  const warnings: string[] = [];
  for (const line of page.lines) {
    if (!line.polygon || line.polygon.length < 3) {
      warnings.push(`line ${line.id} has no polygon`);
      continue;
    }
    const region = page.regions.find((candidate) => candidate.id === line.region_id);
    if (regions.at(-1)?.id !== line.region_id)
      regions.push({ id: line.region_id, type: region?.type ?? null, polygon: region?.polygon ?? [], lines: [] });
    regions.at(-1)!.lines.push({ id: line.id, polygon: line.polygon, baseline: line.baseline ?? [], text: line.text });
  }
  return { format: 'page-2019', regions, warnings, leftOut: [] };
}
