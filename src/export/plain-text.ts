// The plain text of a page: one line of text per TextLine in reading order, a blank line
// between regions, `\n` line ends, ending with a newline when there is any text.
import type { ExportPage } from './export-page.ts';

export function renderPlainText(page: ExportPage): string {
  const blocks = page.regions
    .filter((region) => region.lines.length > 0)
    .map((region) => region.lines.map((line) => line.text).join('\n'));
  const text = blocks.join('\n\n');
  return text.length > 0 ? `${text}\n` : '';
}
