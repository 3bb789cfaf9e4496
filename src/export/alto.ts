// ALTO 4.4 for one page (https://www.loc.gov/standards/alto/), measurement unit pixel.
// Deterministic apart from `timestamp` (Processing/processingDateTime), see docs/result-archive.md.
import type { ExportLine, ExportPage, ExportRegion } from './export-page.ts';
import { formatPoints } from './export-page.ts';
import type { XmlExportOptions } from './pagexml.ts';
import { formatDateTime, formatNumber, XmlWriter, type XmlAttributes } from './xml.ts';

export const ALTO_NAMESPACE = 'http://www.loc.gov/standards/alto/ns-v4#';
const ALTO_SCHEMA_LOCATION = `${ALTO_NAMESPACE} http://www.loc.gov/standards/alto/v4/alto-4-4.xsd`;

export function renderAlto(page: ExportPage, options: XmlExportOptions): string {
  const result = page.result;
  const xml = new XmlWriter();
  xml.open('alto', [
    ['xmlns', ALTO_NAMESPACE],
    ['xmlns:xlink', 'http://www.w3.org/1999/xlink'],
    ['xmlns:xsi', 'http://www.w3.org/2001/XMLSchema-instance'],
    ['xsi:schemaLocation', ALTO_SCHEMA_LOCATION],
    ['SCHEMAVERSION', '4.4'],
  ]);

  xml.open('Description');
  xml.text('MeasurementUnit', 'pixel');
  xml.open('sourceImageInformation');
  xml.text('fileName', result.image.name);
  xml.text('fileIdentifier', result.image.sha256, [['fileIdentifierLocation', 'sha256']]);
  xml.close();
  const when = formatDateTime(options.timestamp);
  const processingIds: string[] = [];
  const software = (description: string): void => {
    xml.open('processingSoftware');
    xml.text('softwareName', result.producer.software);
    xml.text('softwareVersion', result.producer.version);
    xml.text('applicationDescription', description);
    xml.close();
  };
  for (const model of result.producer.models) {
    const id = `processing_${processingIds.length + 1}`;
    processingIds.push(id);
    xml.open('Processing', [['ID', id]]);
    xml.text('processingCategory', 'contentGeneration');
    xml.text('processingDateTime', when);
    xml.text('processingStepDescription', model.role);
    xml.text('processingStepSettings', `model=${model.name} version=${model.version}`);
    software(`${model.role} model ${model.name} ${model.version}`);
    xml.close();
  }
  if (result.correction) {
    const id = `processing_${processingIds.length + 1}`;
    processingIds.push(id);
    xml.open('Processing', [['ID', id]]);
    xml.text('processingCategory', 'contentModification');
    xml.text('processingDateTime', when);
    xml.text('processingStepDescription', 'correction');
    xml.text('processingStepSettings', `provider=${result.correction.provider} model=${result.correction.model}`);
    software(`language model correction ${result.correction.provider} ${result.correction.model}`);
    xml.close();
  }
  if (processingIds.length === 0) {
    processingIds.push('processing_1');
    xml.open('Processing', [['ID', 'processing_1']]);
    xml.text('processingCategory', 'contentGeneration');
    xml.text('processingDateTime', when);
    software('export');
    xml.close();
  }
  xml.close();

  xml.open('Layout');
  xml.open('Page', [
    ['ID', `page_${result.pageNumber}`],
    ['PHYSICAL_IMG_NR', result.pageNumber],
    ['WIDTH', page.width],
    ['HEIGHT', page.height],
    // a page scanned sideways or upside down: its text is turned counterclockwise by the turn that makes it upright
    ['ROTATION', result.orientation ?? null],
    ['PROCESSINGREFS', processingIds.join(' ')],
  ]);
  const regions = page.regions.filter((region) => region.lines.length > 0);
  if (regions.length === 0) {
    xml.empty('PrintSpace', [
      ['HPOS', 0],
      ['VPOS', 0],
      ['WIDTH', page.width],
      ['HEIGHT', page.height],
    ]);
  } else {
    xml.open('PrintSpace', [
      ['HPOS', 0],
      ['VPOS', 0],
      ['WIDTH', page.width],
      ['HEIGHT', page.height],
    ]);
    for (const region of regions) writeBlock(xml, region);
    xml.close();
  }
  xml.close().close().close();
  return xml.toString();
}

// ALTO requires at least one TextLine per TextBlock: regions without lines are left out.
function writeBlock(xml: XmlWriter, region: ExportRegion): void {
  xml.open('TextBlock', [
    ['ID', region.id],
    ['HPOS', region.box.x],
    ['VPOS', region.box.y],
    ['WIDTH', region.box.width],
    ['HEIGHT', region.box.height],
  ]);
  xml.open('Shape');
  xml.empty('Polygon', [['POINTS', formatPoints(region.polygon)]]);
  xml.close();
  for (const line of region.lines) writeLine(xml, line);
  xml.close();
}

function writeLine(xml: XmlWriter, line: ExportLine): void {
  xml.open('TextLine', [
    ['ID', line.id],
    ['HPOS', line.box.x],
    ['VPOS', line.box.y],
    ['WIDTH', line.box.width],
    ['HEIGHT', line.box.height],
    ['BASELINE', line.baseline ? formatPoints(line.baseline) : null],
    // ALTO's correction status: a person corrected the line (docs/corrections.md).
    ['CS', line.machine ? 'true' : null],
  ]);
  xml.open('Shape');
  xml.empty('Polygon', [['POINTS', formatPoints(line.polygon)]]);
  xml.close();
  if (line.words.length === 0) {
    // A line without text (layout only, or nothing read): ALTO needs one String per line.
    xml.empty('String', [
      ['ID', `${line.id}_empty`],
      ['CONTENT', ''],
      ['HPOS', line.box.x],
      ['VPOS', line.box.y],
      ['WIDTH', line.box.width],
      ['HEIGHT', line.box.height],
    ]);
  }
  line.words.forEach((word, index) => {
    const attributes: XmlAttributes = [
      ['ID', word.id],
      ['CONTENT', word.text],
      ['HPOS', word.box.x],
      ['VPOS', word.box.y],
      ['WIDTH', word.box.width],
      ['HEIGHT', word.box.height],
      ['WC', word.confidence === null ? null : formatNumber(word.confidence)],
    ];
    if (word.alternatives) {
      // ALTO's ALTERNATIVE has no confidence attribute: PURPOSE says where it came from and how likely it is.
      xml.open('String', attributes);
      for (const alternative of word.alternatives)
        xml.text('ALTERNATIVE', alternative.text, [['PURPOSE', `recognition confidence=${formatNumber(alternative.confidence)}`]]);
      xml.close();
    } else {
      xml.empty('String', attributes);
    }
    const next = line.words[index + 1];
    if (next) {
      const hpos = word.box.x + word.box.width;
      xml.empty('SP', [
        ['HPOS', hpos],
        ['VPOS', line.box.y],
        ['WIDTH', Math.max(0, next.box.x - hpos)],
      ]);
    }
  });
  xml.close();
}
