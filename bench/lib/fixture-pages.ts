// The evaluation pages: ../shared/fixtures/pages (override with a directory argument).
// Language and kind (handwritten or printed) come from the table in that folder's
// README, so that adding a page there is all it takes to evaluate it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const DEFAULT_PAGES_DIR = path.resolve(import.meta.dirname, '../../../shared/fixtures/pages');

export type PageKind = 'handwritten' | 'printed';

export interface FixturePage {
  name: string;
  imagePath: string;
  /** Ground-truth lines in reading order (NAME.gt.txt). */
  groundTruth: string[];
  /** The ground-truth XML (PAGE or ALTO) next to the image. */
  xmlPath: string;
  /** Tesseract language code: eng, fra or deu. */
  language: string;
  kind: PageKind;
}

const LANGUAGES: Record<string, string> = { english: 'eng', french: 'fra', german: 'deu' };
const IMAGE_EXTENSIONS = ['.jpg', '.jpeg', '.png', '.tif', '.tiff'];

export function listFixturePages(directory: string = DEFAULT_PAGES_DIR): FixturePage[] {
  const readme = path.join(directory, 'README.md');
  if (!existsSync(readme))
    throw new Error(`no fixture pages at ${directory} (README.md missing); pass the folder of ../shared/fixtures/pages`);
  const files = readdirSync(directory);
  const pages: FixturePage[] = [];
  for (const row of tableRows(readFileSync(readme, 'utf8'))) {
    const name = row[0].replace(/`/g, '').trim();
    const image = files.find((file) => path.parse(file).name === name && IMAGE_EXTENSIONS.includes(path.extname(file).toLowerCase()));
    if (!image) throw new Error(`fixture page ${name}: no image next to the README`);
    const languageCell = row[5].toLowerCase();
    const language = Object.entries(LANGUAGES).find(([word]) => languageCell.includes(word))?.[1];
    if (!language) throw new Error(`fixture page ${name}: unknown language ${JSON.stringify(row[5])}`);
    const kind: PageKind = /\bhandwritten\b/i.test(row[6]) && !/typewritten|printed/i.test(row[6]) ? 'handwritten' : 'printed';
    pages.push({
      name,
      imagePath: path.join(directory, image),
      groundTruth: readFileSync(path.join(directory, `${name}.gt.txt`), 'utf8')
        .replace(/\n$/, '')
        .split('\n'),
      xmlPath: path.join(directory, `${name}.xml`),
      language,
      kind,
    });
  }
  return pages;
}

/** Cells of the README's page table (rows whose first cell is a `code` page name). */
function tableRows(markdown: string): string[][] {
  return markdown
    .split('\n')
    .filter((line) => /^\|\s*`[^`]+`\s*\|/.test(line))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}
