// The recognition test pages (test/fixtures/pages) and their ground-truth lines
// (compared with bench/lib/layout-metrics.ts).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { allLines, type TextLine } from '../../src/recognition/page/page-result.ts';
import { pageResultFromGroundTruth } from './page-result-from-ground-truth.ts';

export { matchLines, readingOrderAgreement } from '../../bench/lib/layout-metrics.ts';

const directory = fileURLToPath(new URL('../fixtures/pages/', import.meta.url));

export interface RecognitionFixture {
  name: string;
  imagePath: string;
  xmlPath: string;
  /** Ground-truth lines in reading order. */
  groundTruth: string[];
}

function fixture(name: string, extension: string): RecognitionFixture {
  return {
    name,
    imagePath: `${directory}${name}${extension}`,
    xmlPath: `${directory}${name}.xml`,
    groundTruth: readFileSync(`${directory}${name}.gt.txt`, 'utf8').replace(/\n$/, '').split('\n'),
  };
}

/** A printed book page: the control. */
export const PRINTED_PAGE = fixture('fondue_en_print_dracula_page_51', '.png');
/** A handwritten diary page with a note in the left margin and the page number top right. */
export const MARGINAL_PAGE = fixture('peraire_test_B.12.japon3_0048', '.jpg');

export async function groundTruthLines(page: RecognitionFixture): Promise<TextLine[]> {
  return allLines(await pageResultFromGroundTruth({ imagePath: page.imagePath, xmlPath: page.xmlPath }));
}
