// IIIF for a done job (docs/iiif.md): the Presentation 3 manifest (a Canvas per page, its image
// through our Image API 3 service), the lines and words of a page as W3C Web Annotations
// (`supplementing`, one AnnotationPage per canvas and granularity), and the Content Search 2
// answer over the job's text. Pure: pages and URLs in, JSON out; the routes give the URLs.
import type { ExportLine, ExportPage, ExportWord } from './export-page.ts';

export const PRESENTATION_CONTEXT = 'http://iiif.io/api/presentation/3/context.json';
export const SEARCH_CONTEXT = 'http://iiif.io/api/search/2/context.json';

/** Where everything of one job lives; each function answers an absolute URL. */
export interface IiifUrls {
  manifest: string;
  canvas(page: number): string;
  /** The Image API service's base URI (`{base}/info.json`, `{base}/{region}/{size}/{rotation}/{quality}.{format}`). */
  imageService(page: number): string;
  annotations(page: number, granularity: Granularity): string;
  search: string;
}

export type Granularity = 'line' | 'word';

export interface IiifPage {
  pageNumber: number;
  name: string;
  width: number;
  height: number;
}

/** The job's manifest: a Canvas per page with its image as the `painting` annotation. */
export function iiifManifest(job: { jobId: string; createdAt: string }, pages: readonly IiifPage[], urls: IiifUrls): object {
  return {
    '@context': PRESENTATION_CONTEXT,
    id: urls.manifest,
    type: 'Manifest',
    label: { none: [`Job ${job.jobId}`] },
    summary: {
      en: [`${pages.length} page${pages.length === 1 ? '' : 's'} read by handwriting recognition; lines and words as annotations.`],
    },
    metadata: [
      { label: { en: ['Job'] }, value: { none: [job.jobId] } },
      { label: { en: ['Created'] }, value: { none: [job.createdAt] } },
    ],
    viewingDirection: 'left-to-right',
    behavior: ['paged'],
    service: [{ id: urls.search, type: 'SearchService2' }],
    items: pages.map((page) => canvas(page, urls)),
  };
}

function canvas(page: IiifPage, urls: IiifUrls): object {
  const canvasId = urls.canvas(page.pageNumber);
  const service = urls.imageService(page.pageNumber);
  return {
    id: canvasId,
    type: 'Canvas',
    label: { none: [`${page.pageNumber}: ${page.name}`] },
    width: page.width,
    height: page.height,
    items: [
      {
        id: `${canvasId}/painting`,
        type: 'AnnotationPage',
        items: [
          {
            id: `${canvasId}/painting/image`,
            type: 'Annotation',
            motivation: 'painting',
            target: canvasId,
            body: {
              id: `${service}/full/max/0/default.jpg`,
              type: 'Image',
              format: 'image/jpeg',
              width: page.width,
              height: page.height,
              service: [{ id: service, type: 'ImageService3', profile: 'level1' }],
            },
          },
        ],
      },
    ],
    annotations: [
      { id: urls.annotations(page.pageNumber, 'line'), type: 'AnnotationPage' },
      { id: urls.annotations(page.pageNumber, 'word'), type: 'AnnotationPage' },
    ],
  };
}

/** The page's lines (or words) as `supplementing` annotations on its canvas: the text, the box as an `xywh` fragment. */
export function iiifAnnotationPage(page: ExportPage, pageNumber: number, granularity: Granularity, urls: IiifUrls): object {
  const canvasId = urls.canvas(pageNumber);
  const id = urls.annotations(pageNumber, granularity);
  const lines = page.regions.flatMap((region) => region.lines);
  const items =
    granularity === 'line'
      ? lines.filter((line) => line.text.trim() !== '').map((line) => textAnnotation(id, canvasId, line, lineLabel(line)))
      : lines.flatMap((line) => line.words.map((word) => textAnnotation(id, canvasId, word, wordLabel(line, word))));
  return { '@context': PRESENTATION_CONTEXT, id, type: 'AnnotationPage', items };
}

function lineLabel(line: ExportLine): string | null {
  return line.machine ? `corrected; machine reading: ${line.machine.text}` : null;
}

function wordLabel(line: ExportLine, word: ExportWord): string | null {
  return line.machine ? 'corrected line' : word.confidence === null ? null : `confidence ${word.confidence.toFixed(2)}`;
}

function textAnnotation(pageId: string, canvasId: string, item: ExportLine | ExportWord, label: string | null): object {
  const { x, y, width, height } = item.box;
  return {
    id: `${pageId}/${encodeURIComponent(item.id)}`,
    type: 'Annotation',
    motivation: 'supplementing',
    ...(label ? { label: { en: [label] } } : {}),
    body: { type: 'TextualBody', value: item.text, format: 'text/plain' },
    target: `${canvasId}#xywh=${x},${y},${width},${height}`,
  };
}

/** A match of the search: the line it is in, on which page. */
export interface SearchHit {
  pageNumber: number;
  line: ExportLine;
  /** Where in the line's text the match starts and ends (UTF-16 offsets). */
  start: number;
  end: number;
}

/** Lines of a page whose text contains the query (case- and diacritics-insensitive, whitespace runs as one space). */
export function searchPage(page: ExportPage, pageNumber: number, query: string): SearchHit[] {
  const needle = foldForSearch(query.trim().replace(/\s+/g, ' '));
  if (needle.length === 0) return [];
  const hits: SearchHit[] = [];
  for (const line of page.regions.flatMap((region) => region.lines)) {
    const { folded, offsets } = foldWithOffsets(line.text);
    let from = 0;
    for (let at = folded.indexOf(needle, from); at >= 0; at = folded.indexOf(needle, from)) {
      hits.push({ pageNumber, line, start: offsets[at], end: offsets[at + needle.length] });
      from = at + needle.length;
    }
  }
  return hits;
}

/** The Content Search 2 answer: an AnnotationPage of `supplementing` annotations targeting the matched lines. */
export function iiifSearchResponse(requestUrl: string, hits: readonly SearchHit[], urls: IiifUrls): object {
  const hitId = (hit: SearchHit): string => `${urls.search}/hits/${hit.pageNumber}/${encodeURIComponent(hit.line.id)}/${hit.start}`;
  return {
    '@context': SEARCH_CONTEXT,
    id: requestUrl,
    type: 'AnnotationPage',
    items: hits.map((hit) => {
      const { x, y, width, height } = hit.line.box;
      return {
        id: hitId(hit),
        type: 'Annotation',
        motivation: 'supplementing',
        body: { type: 'TextualBody', value: hit.line.text, format: 'text/plain' },
        target: {
          type: 'SpecificResource',
          source: { id: urls.canvas(hit.pageNumber), type: 'Canvas', partOf: [{ id: urls.manifest, type: 'Manifest' }] },
          selector: {
            type: 'FragmentSelector',
            conformsTo: 'http://www.w3.org/TR/media-frags/',
            value: `xywh=${x},${y},${width},${height}`,
          },
        },
      };
    }),
    ...(hits.length > 0
      ? {
          annotations: [
            {
              id: `${requestUrl}#quotes`,
              type: 'AnnotationPage',
              items: hits.map((hit) => ({
                id: `${hitId(hit)}/quote`,
                type: 'Annotation',
                motivation: 'highlighting',
                target: {
                  type: 'SpecificResource',
                  source: hitId(hit),
                  selector: [
                    {
                      type: 'TextQuoteSelector',
                      prefix: hit.line.text.slice(Math.max(0, hit.start - 20), hit.start),
                      exact: hit.line.text.slice(hit.start, hit.end),
                      suffix: hit.line.text.slice(hit.end, hit.end + 20),
                    },
                  ],
                },
              })),
            },
          ],
        }
      : {}),
  };
}

/** Lower case without combining marks (é → e, aͤ → a), NFC otherwise. */
function foldForSearch(text: string): string {
  return foldWithOffsets(text).folded;
}

/** The folded text and, for each of its UTF-16 positions (and its end), the position in the original. */
function foldWithOffsets(text: string): { folded: string; offsets: number[] } {
  let folded = '';
  const offsets: number[] = [];
  let position = 0;
  for (const character of text) {
    const plain = character
      .normalize('NFD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .replace(/\s/g, ' ');
    for (let index = 0; index < plain.length; index++) offsets.push(position);
    folded += plain;
    position += character.length;
  }
  offsets.push(position);
  // Whitespace runs count as one space, as in the query.
  let collapsed = '';
  const collapsedOffsets: number[] = [];
  for (let index = 0; index < folded.length; index++) {
    if (folded[index] === ' ' && collapsed.endsWith(' ')) continue;
    collapsed += folded[index];
    collapsedOffsets.push(offsets[index]);
  }
  collapsedOffsets.push(offsets[folded.length]);
  return { folded: collapsed, offsets: collapsedOffsets };
}
