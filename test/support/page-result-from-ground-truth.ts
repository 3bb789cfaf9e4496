// Builds a PageResult from real ground-truth PAGE (2013/2019) or ALTO (v2/v4) files, so the
// export is tested on real geometry and real text (ſ, ß, aͤ, é, ...) before recognition exists.
// Regions follow ReadingOrder (PAGE) or document order (ALTO); a String holding spaces (the
// eScriptorium line-level export) gives a line without words, as a line-only recognizer would.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { PageResult, Point, TextLine, TextRegion, Word } from '../../src/recognition/page/page-result.ts';
import { childNamed, childrenNamed, descendantsNamed, parseXml, type XmlElement } from './xml-tree.ts';

export interface GroundTruthPage {
  imagePath: string;
  xmlPath: string;
  /** Name the image has in the submitted ZIP; default: the image's file name. */
  name?: string;
  pageNumber?: number;
}

export async function pageResultFromGroundTruth(page: GroundTruthPage): Promise<PageResult> {
  const [image, xml] = await Promise.all([readFile(page.imagePath), readFile(page.xmlPath, 'utf8')]);
  const metadata = await sharp(image).metadata();
  const root = parseXml(xml);
  const regions = root.localName === 'PcGts' ? regionsFromPage(root) : regionsFromAlto(root);
  const swap = (metadata.orientation ?? 1) >= 5;
  return {
    schema: 'hwr.page-result/1',
    pageNumber: page.pageNumber ?? 1,
    image: {
      name: page.name ?? path.basename(page.imagePath),
      width: swap ? metadata.height : metadata.width,
      height: swap ? metadata.width : metadata.height,
      sha256: createHash('sha256').update(image).digest('hex'),
      format: metadata.format,
      dpi: metadata.density && metadata.density > 1 ? metadata.density : null,
    },
    regions,
    producer: {
      software: 'hwr',
      version: '0.1.0',
      models: [
        { role: 'detection', name: 'ground-truth-layout', version: '1' },
        { role: 'recognition', name: 'ground-truth-text', version: '1' },
      ],
    },
    warnings: [],
  };
}

function regionsFromPage(root: XmlElement): TextRegion[] {
  const page = childNamed(root, 'Page');
  if (!page) throw new Error('PAGE file without Page');
  const regions = descendantsNamed(page, 'TextRegion');
  const order = descendantsNamed(page, 'RegionRefIndexed')
    .sort((a, b) => Number(a.attributes.index) - Number(b.attributes.index))
    .map((ref) => ref.attributes.regionRef);
  const byId = new Map(regions.map((region) => [region.attributes.id, region]));
  const ordered = order.map((id) => byId.get(id)).filter((region): region is XmlElement => region !== undefined);
  const rest = regions.filter((region) => !ordered.includes(region));
  return [...ordered, ...rest].map((region) => ({
    id: region.attributes.id,
    polygon: pagePoints(childNamed(region, 'Coords')),
    type: region.attributes.type,
    lines: childrenNamed(region, 'TextLine').map((line): TextLine => {
      const words = childrenNamed(line, 'Word').map((word): Word => {
        const polygon = pagePoints(childNamed(word, 'Coords'));
        return { id: word.attributes.id, text: pageText(word), box: boxOf(polygon), polygon, confidence: pageConf(word) };
      });
      return {
        id: line.attributes.id,
        polygon: pagePoints(childNamed(line, 'Coords')),
        baseline: pagePoints(childNamed(line, 'Baseline')),
        text: pageText(line),
        confidence: pageConf(line),
        words: words.every((word) => word.text !== '' && !/\s/.test(word.text)) ? words : [],
      };
    }),
  }));
}

function regionsFromAlto(root: XmlElement): TextRegion[] {
  return descendantsNamed(root, 'TextBlock').map((block) => ({
    id: block.attributes.ID,
    polygon: altoPolygon(block),
    lines: childrenNamed(block, 'TextLine').map((line): TextLine => {
      const strings = childrenNamed(line, 'String');
      const words = strings.map((string): Word => {
        const box = altoBox(string);
        return { id: string.attributes.ID ?? '', text: string.attributes.CONTENT, box, confidence: Number(string.attributes.WC ?? 1) };
      });
      const text = strings.map((string) => string.attributes.CONTENT).join(' ');
      return {
        id: line.attributes.ID,
        polygon: altoPolygon(line),
        baseline: altoBaseline(line),
        text,
        confidence: words.length > 0 ? words.reduce((sum, word) => sum + word.confidence, 0) / words.length : 1,
        words: words.every((word) => word.text !== '' && !/\s/.test(word.text)) ? words : [],
      };
    }),
  }));
}

function pageText(element: XmlElement): string {
  const equivs = childrenNamed(element, 'TextEquiv').sort((a, b) => Number(a.attributes.index ?? 0) - Number(b.attributes.index ?? 0));
  const unicode = equivs[0] ? childNamed(equivs[0], 'Unicode') : undefined;
  return unicode?.text ?? '';
}

function pageConf(element: XmlElement): number {
  const conf = childrenNamed(element, 'TextEquiv')[0]?.attributes.conf;
  return conf === undefined ? 1 : Number(conf);
}

function pagePoints(coords: XmlElement | undefined): Point[] {
  return parsePoints(coords?.attributes.points ?? '');
}

function parsePoints(text: string): Point[] {
  const numbers = text
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
  const points: Point[] = [];
  for (let index = 0; index + 1 < numbers.length; index += 2) points.push([numbers[index], numbers[index + 1]]);
  return points;
}

function altoBox(element: XmlElement): Word['box'] {
  return {
    x: Number(element.attributes.HPOS ?? 0),
    y: Number(element.attributes.VPOS ?? 0),
    width: Number(element.attributes.WIDTH ?? 0),
    height: Number(element.attributes.HEIGHT ?? 0),
  };
}

function altoPolygon(element: XmlElement): Point[] {
  const polygon = childNamed(childNamed(element, 'Shape') ?? element, 'Polygon');
  if (polygon) return parsePoints(polygon.attributes.POINTS);
  const box = altoBox(element);
  return [
    [box.x, box.y],
    [box.x + box.width, box.y],
    [box.x + box.width, box.y + box.height],
    [box.x, box.y + box.height],
  ];
}

function altoBaseline(line: XmlElement): Point[] {
  const baseline = line.attributes.BASELINE ?? '';
  const points = parsePoints(baseline);
  if (points.length >= 2) return points;
  const box = altoBox(line);
  const y = baseline.trim() !== '' ? Number(baseline) : box.y + box.height;
  return [
    [box.x, y],
    [box.x + box.width, y],
  ];
}

function boxOf(points: Point[]): Word['box'] {
  if (points.length === 0) return { x: 0, y: 0, width: 0, height: 0 };
  const xs = points.map(([x]) => x);
  const ys = points.map(([, y]) => y);
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return { x, y, width: Math.max(...xs) - x, height: Math.max(...ys) - y };
}
