// PAGE XML 2019-07-15 for one page (https://github.com/PRImA-Research-Lab/PAGE-XML).
// Deterministic: the only value that is not a function of the PageResult is `timestamp`
// (Metadata/Created and Metadata/LastChange), see docs/result-archive.md.
import type { ExportLine, ExportPage, ExportRegion } from './export-page.ts';
import { formatPoints } from './export-page.ts';
import { formatDateTime, formatNumber, XmlWriter } from './xml.ts';

export const PAGE_NAMESPACE = 'http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15';
const PAGE_SCHEMA_LOCATION = `${PAGE_NAMESPACE} ${PAGE_NAMESPACE}/pagecontent.xsd`;

const TEXT_REGION_TYPES = new Set([
  'paragraph',
  'heading',
  'caption',
  'header',
  'footer',
  'page-number',
  'drop-capital',
  'credit',
  'floating',
  'signature-mark',
  'catch-word',
  'marginalia',
  'footnote',
  'footnote-continued',
  'endnote',
  'TOC-entry',
  'list-label',
  'other',
]);

export interface XmlExportOptions {
  /** The one timestamp written into the file. */
  timestamp: Date;
}

export function renderPageXml(page: ExportPage, options: XmlExportOptions): string {
  const result = page.result;
  const xml = new XmlWriter();
  xml.open('PcGts', [
    ['xmlns', PAGE_NAMESPACE],
    ['xmlns:xsi', 'http://www.w3.org/2001/XMLSchema-instance'],
    ['xsi:schemaLocation', PAGE_SCHEMA_LOCATION],
  ]);

  const when = formatDateTime(options.timestamp);
  xml.open('Metadata');
  xml.text('Creator', `${result.producer.software} ${result.producer.version}`);
  xml.text('Created', when);
  xml.text('LastChange', when);
  if (result.warnings.length > 0) xml.text('Comments', result.warnings.join('\n'));
  for (const model of result.producer.models) {
    xml.open('MetadataItem', [
      ['type', 'processingStep'],
      ['name', model.role],
      ['value', `${model.name} ${model.version}`],
    ]);
    xml.open('Labels', [['externalModel', result.producer.software]]);
    xml.empty('Label', [
      ['value', model.name],
      ['type', 'model'],
    ]);
    xml.empty('Label', [
      ['value', model.version],
      ['type', 'version'],
    ]);
    xml.close().close();
  }
  if (result.correction) {
    const correction = result.correction;
    xml.open('MetadataItem', [
      ['type', 'processingStep'],
      ['name', 'correction'],
      ['value', `${correction.provider} ${correction.model}`],
    ]);
    xml.open('Labels', [['externalModel', result.producer.software]]);
    xml.empty('Label', [
      ['value', correction.provider],
      ['type', 'provider'],
    ]);
    xml.empty('Label', [
      ['value', correction.model],
      ['type', 'model'],
    ]);
    xml.empty('Label', [
      ['value', String(correction.refusedLines.length)],
      ['type', 'refused-lines'],
    ]);
    xml.close().close();
  }
  xml.close();

  const dpi = result.image.dpi;
  xml.open('Page', [
    ['imageFilename', result.image.name],
    ['imageWidth', page.width],
    ['imageHeight', page.height],
    ['imageXResolution', dpi],
    ['imageYResolution', dpi],
    ['imageResolutionUnit', dpi === null ? null : 'PPI'],
    // a page scanned sideways or upside down: the clockwise turn that makes it upright, in (-180, 180]
    ['orientation', result.orientation === 270 ? -90 : (result.orientation ?? null)],
  ]);
  if (page.regions.length > 0) {
    xml.open('ReadingOrder');
    xml.open('OrderedGroup', [
      ['id', 'reading_order'],
      ['caption', 'Regions reading order'],
    ]);
    page.regions.forEach((region, index) =>
      xml.empty('RegionRefIndexed', [
        ['index', index],
        ['regionRef', region.id],
      ]),
    );
    xml.close().close();
  }
  for (const region of page.regions) writeRegion(xml, region);
  xml.close();
  xml.close();
  return xml.toString();
}

function writeRegion(xml: XmlWriter, region: ExportRegion): void {
  const knownType = region.type !== null && TEXT_REGION_TYPES.has(region.type);
  xml.open('TextRegion', [
    ['id', region.id],
    ['custom', region.type !== null && !knownType ? `structure {type:${region.type};}` : null],
    ['type', knownType ? region.type : null],
  ]);
  xml.empty('Coords', [['points', formatPoints(region.polygon)]]);
  for (const line of region.lines) writeLine(xml, line);
  xml.open('TextEquiv');
  xml.text('Unicode', region.lines.map((line) => line.text).join('\n'));
  xml.close();
  xml.close();
}

function writeLine(xml: XmlWriter, line: ExportLine): void {
  // A line a person corrected says so (PAGE's `custom`), and keeps the machine's reading (below).
  xml.open('TextLine', [
    ['id', line.id],
    ['custom', line.machine ? 'correction {source:manual;}' : null],
  ]);
  xml.empty('Coords', [['points', formatPoints(line.polygon)]]);
  if (line.baseline) xml.empty('Baseline', [['points', formatPoints(line.baseline)]]);
  // Estimated words carry no geometry of their own: PAGE gets the line level only.
  if (!line.wordsEstimated) {
    for (const word of line.words) {
      xml.open('Word', [['id', word.id]]);
      xml.empty('Coords', [['points', formatPoints(word.polygon)]]);
      if (word.alternatives) {
        // The reading first (PAGE: the lowest index is the main text), then the decoder's alternatives.
        writeTextEquiv(xml, word.text, word.confidence, { index: 0, comments: null });
        word.alternatives.forEach((alternative, index) =>
          writeTextEquiv(xml, alternative.text, alternative.confidence, { index: index + 1, comments: 'alternative reading' }),
        );
      } else {
        writeTextEquiv(xml, word.text, word.confidence);
      }
      xml.close();
    }
  }
  if (line.machine) {
    // The correction is the main text (PAGE: the lowest index); the machine's reading follows it.
    writeTextEquiv(xml, line.text, null, { index: 0, comments: 'corrected' });
    writeTextEquiv(xml, line.machine.text, line.machine.confidence, { index: 1, comments: 'machine reading' });
  } else {
    writeTextEquiv(xml, line.text, line.confidence);
  }
  xml.close();
}

function writeTextEquiv(
  xml: XmlWriter,
  text: string,
  confidence: number | null,
  marks: { index: number; comments: string | null } | null = null,
): void {
  xml.open('TextEquiv', [
    ['index', marks?.index ?? null],
    ['conf', confidence === null ? null : formatNumber(confidence)],
    ['comments', marks?.comments ?? null],
  ]);
  xml.text('Unicode', text);
  xml.close();
}
