// The search tests' page pipeline (test/README.md, "Stand-ins": a pipeline in service tests): each
// page is answered with its real ground truth (two real scans of fixtures/export, their ALTO),
// words cut from the line text over the line's box as a recognizer gives them, and one word given
// an alternative reading as the beam search gives it ("Holmwood", also "Hohnwood"). The real
// export pipeline then writes the archive and the search index.
import path from 'node:path';
import type { PagePipeline } from '../../src/pipeline/pipeline.ts';
import type { PageResult, Word } from '../../src/recognition/page/page-result.ts';
import { FIXTURES } from './http-client.ts';
import { pageResultFromGroundTruth } from './page-result-from-ground-truth.ts';

/** The pages by the name a ZIP gives them (any folder): their image and ground truth. */
export const SEARCH_PAGES: Record<string, { imagePath: string; xmlPath: string }> = {
  'f207.jpg': {
    imagePath: path.join(FIXTURES, 'export/cremma19_zola_f207.jpg'),
    xmlPath: path.join(FIXTURES, 'export/cremma19_zola_f207.xml'),
  },
  'dracula.png': {
    imagePath: path.join(FIXTURES, 'export/fondue_en_print_dracula_page_51.png'),
    xmlPath: path.join(FIXTURES, 'export/fondue_en_print_dracula_page_51.xml'),
  },
};

/** Lines without words get words cut from their text over the line's box (as a recognizer gives them). */
function withWords(page: PageResult): PageResult {
  for (const region of page.regions) {
    for (const line of region.lines) {
      if (line.words.length > 0) continue;
      const xs = line.polygon.map((point) => point[0]);
      const ys = line.polygon.map((point) => point[1]);
      const [left, top] = [Math.min(...xs), Math.min(...ys)];
      const width = Math.max(...xs) - left;
      const height = Math.max(...ys) - top;
      const tokens = line.text.split(/\s+/).filter(Boolean);
      const total = tokens.reduce((sum, token) => sum + token.length + 1, 0);
      let at = 0;
      line.words = tokens.map((token, index): Word => {
        const box = { x: Math.round(left + (width * at) / total), y: top, width: Math.round((width * token.length) / total), height };
        at += token.length + 1;
        return { id: `${line.id}_w${index + 1}`, text: token, box, confidence: 0.9 };
      });
      line.text = tokens.join(' ');
    }
  }
  for (const word of page.regions.flatMap((region) => region.lines.flatMap((line) => line.words))) {
    // The decoder's other readings of a word, as recognition keeps them (reading/word-alternatives.ts).
    if (word.text === 'Holmwood') word.alternatives = [{ text: 'Hohnwood', confidence: 0.07 }];
  }
  return page;
}

export const groundTruthSearchPipeline: PagePipeline = {
  async processPage(task, context) {
    for (const step of ['layout', 'recognition'] as const) await context.enterStep(step);
    const source = SEARCH_PAGES[path.posix.basename(task.page.name)];
    return withWords(await pageResultFromGroundTruth({ ...source, name: task.page.name, pageNumber: task.page.pageNumber }));
  },
};
