// The plain text of a page: one line per TextLine that has text, in reading order, a blank
// line between regions, `\n` line ends, ending with a newline when there is any text.
import type { ExportPage } from './export-page.ts';

export function renderPlainText(page: ExportPage): string {
  const blocks = page.regions
    .map((region) => region.lines.map((line) => line.text).filter((text) => text.trim() !== ''))
    .filter((lines) => lines.length > 0)
    .map((lines) => lines.join('\n'));
  const text = blocks.join('\n\n');
  return text.length > 0 ? `${text}\n` : '';
}

/**
 * The job's text: every page's text (as renderPlainText gives it) in page order, a form feed
 * (U+000C) between two pages, as pdftotext separates pages; empty pages stay as empty strings.
 */
export function renderJobText(pageTexts: readonly string[]): string {
  return pageTexts.join('\f');
}
