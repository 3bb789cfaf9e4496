// One searchable PDF for a job, written page by page to a stream: each page is the scan at
// its real size with an invisible (rendering mode 3) text layer in which every word is
// placed and scaled onto its box. `pdfa-2b` adds what PDF/A-2b asks for: XMP with the
// PDF/A identification, an sRGB output intent with its ICC profile; every PDF has a
// document id, embedded fonts and no encryption.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import type { Writable } from 'node:stream';
import { PDFHexString, PDFName, PDFRawStream, PDFString, type PDFDict, type PDFRef } from 'pdf-lib';
import type { ExportLine, ExportPage } from '../export-page.ts';
import { mapBox, turnMaps } from '../../recognition/engine/turned-page.ts';
import type { Point } from '../../recognition/page/page-result.ts';
import { placeLineWords } from './word-placement.ts';
import { orientationMatrix, preparePdfImage, type PdfImage, type PdfImageData } from './page-image.ts';
import { PdfObjectWriter } from './pdf-object-writer.ts';
import { flateStream, TextLayerFont } from './text-font.ts';
import { pdfDate, renderXmp } from './xmp.ts';

export type SearchablePdfFormat = 'pdfa-2b' | 'pdf';

export interface SearchablePdfOptions {
  format: SearchablePdfFormat;
  title: string;
  /** e.g. `hwr 0.1.0`: Producer and CreatorTool. */
  producer: string;
  /** The document's one timestamp (creation and modification date). */
  created: Date;
  /** Seeds the document id together with the content (e.g. the job id). */
  documentKey: string;
  fontBytes: Uint8Array;
  /** The sRGB ICC profile of the output intent (needed for `pdfa-2b`). */
  iccProfile: Uint8Array;
}

export interface PdfPageReport {
  pageNumber: number;
  imageRoute: PdfImage['route'];
  widthPt: number;
  heightPt: number;
  /** Resolution the page size was computed from. */
  dpi: number;
  words: number;
  /** Set when the image's pixel size differs from the page result's. */
  sizeMismatch: string | null;
}

export interface PdfOutcome {
  bytes: number;
  sha256: string;
  pages: number;
}

/** Resolution assumed for images that declare none. */
export const DEFAULT_DPI = 300;
// PDF page sides must lie within 3..14400 units (ISO 32000-1, annex C; PDF/A-2 keeps the limit).
const MIN_SIDE_PT = 3;
const MAX_SIDE_PT = 14400;

export class SearchablePdfWriter {
  private readonly writer: PdfObjectWriter;
  private readonly options: SearchablePdfOptions;
  private readonly pagesRef: PDFRef;
  private readonly kids: PDFRef[] = [];
  private font: TextLayerFont | null = null;

  private constructor(sink: Writable, options: SearchablePdfOptions) {
    this.writer = new PdfObjectWriter(sink);
    this.options = options;
    this.pagesRef = this.writer.allocate();
  }

  static async start(sink: Writable, options: SearchablePdfOptions): Promise<SearchablePdfWriter> {
    const pdf = new SearchablePdfWriter(sink, options);
    await pdf.writer.writeHeader();
    return pdf;
  }

  async addPage(page: ExportPage, imageBytes: Buffer): Promise<PdfPageReport> {
    const { context } = this.writer;
    const pageNumber = page.result.pageNumber;
    const image = await preparePdfImage(imageBytes, pageNumber);
    const dpi = page.result.image.dpi ?? DEFAULT_DPI;
    let scale = 72 / dpi;
    const longSide = Math.max(page.width, page.height);
    const shortSide = Math.min(page.width, page.height);
    if (longSide * scale > MAX_SIDE_PT) scale = MAX_SIDE_PT / longSide;
    if (shortSide * scale < MIN_SIDE_PT) scale = Math.min(MIN_SIDE_PT / shortSide, MAX_SIDE_PT / longSide);
    const widthPt = round(page.width * scale);
    const heightPt = round(page.height * scale);

    const swapped = image.orientation >= 5;
    const orientedWidth = swapped ? image.height : image.width;
    const orientedHeight = swapped ? image.width : image.height;
    const sizeMismatch =
      orientedWidth !== page.width || orientedHeight !== page.height
        ? `image is ${orientedWidth}x${orientedHeight} px, page result says ${page.width}x${page.height} px`
        : null;

    const imageRef = await this.writeImage(image);
    const [a, b, c, d, e, f] = orientationMatrix(image.orientation, image, widthPt, heightPt);
    const operations = [`q ${[a, b, c, d, e, f].map(num).join(' ')} cm /Im1 Do Q`];
    const words = this.textLayer(page, scale, heightPt, operations);

    const contents = await this.writer.add(flateStream(context, Buffer.from(`${operations.join('\n')}\n`, 'latin1'), {}));
    const resources: Record<string, unknown> = { XObject: { Im1: imageRef } };
    if (words > 0) resources.Font = { F1: this.font!.ref };
    const pageRef = await this.writer.add(
      context.obj({
        Type: 'Page',
        Parent: this.pagesRef,
        MediaBox: [0, 0, widthPt, heightPt],
        Resources: resources as never,
        Contents: contents,
      }),
    );
    this.kids.push(pageRef);
    return { pageNumber, imageRoute: image.route, widthPt, heightPt, dpi: round(72 / scale), words, sizeMismatch };
  }

  private textLayer(page: ExportPage, scale: number, pageHeightPt: number, operations: string[]): number {
    const lines = page.regions.flatMap((region) => region.lines).filter((line) => line.words.length > 0);
    if (lines.length === 0) return 0;
    const font = (this.font ??= new TextLayerFont(this.options.fontBytes, this.writer.allocate()));
    operations.push('BT', '3 Tr', '/F1 1 Tf');
    // A page read turned (sideways or upside down) has its words placed as on the page turned
    // upright, then drawn along the writing's direction in the image (the text matrix's axes).
    const turn = page.result.orientation ?? 0;
    const frame = turn === 0 ? null : uprightFrame(turn, page.width, page.height);
    // a point of the upright page in PDF points (y up)
    const pdfPoint = (p: Point): [number, number] => {
      const [x, y] = frame ? frame.toImage(p) : p;
      return [x * scale, pageHeightPt - y * scale];
    };
    // the directions of the upright page's x and of its up, in PDF space, one unit long
    const [ox, oy] = pdfPoint([0, 0]);
    const [ax, ay] = pdfPoint([1, 0]);
    const [ux, uy] = pdfPoint([0, -1]);
    const along = [(ax - ox) / scale, (ay - oy) / scale];
    const up = [(ux - ox) / scale, (uy - oy) / scale];
    const textMatrix = (horizontal: number, size: number, at: Point): string =>
      [horizontal * along[0], horizontal * along[1], size * up[0], size * up[1], ...pdfPoint(at)].map(num).join(' ');
    let words = 0;
    for (const line of frame ? lines.map((line) => lineInFrame(line, frame.toUpright)) : lines) {
      for (const placement of placeLineWords(line, font.verticalMetrics, (text) => font.encode(text).width)) {
        const encoded = font.encode(placement.text);
        if (encoded.length === 0) continue;
        const size = placement.size * scale;
        const horizontal = encoded.width > 0 ? ((placement.right - placement.left) * scale) / encoded.width : size;
        operations.push(`${textMatrix(horizontal, size, [placement.left, placement.baseline])} Tm ${encoded.hex} Tj`);
        words++;
        // An explicit space between words, stretched over the gap up to the next word, so
        // that extraction and search see word boundaries even where handwritten words touch.
        if (placement.spaceTo !== null) {
          const space = font.encode(' ');
          const gap = Math.max((placement.spaceTo - placement.right) * scale, 0.01);
          operations.push(`${textMatrix(gap / space.width, size, [placement.right, placement.baseline])} Tm ${space.hex} Tj`);
        }
      }
    }
    operations.push('ET');
    return words;
  }

  private async writeImage(image: PdfImage): Promise<PDFRef> {
    const softMask = image.softMask ? await this.writer.add(this.imageStream(image.softMask, null)) : null;
    return this.writer.add(this.imageStream(image, softMask));
  }

  private imageStream(image: PdfImageData, softMask: PDFRef | null): PDFRawStream {
    const { context } = this.writer;
    const colorSpace =
      typeof image.colorSpace === 'string'
        ? image.colorSpace
        : [
            PDFName.of('Indexed'),
            PDFName.of('DeviceRGB'),
            image.colorSpace.indexed.length / 3 - 1,
            PDFHexString.of(image.colorSpace.indexed.toString('hex')),
          ];
    const dict: Record<string, unknown> = {
      Type: 'XObject',
      Subtype: 'Image',
      Width: image.width,
      Height: image.height,
      ColorSpace: colorSpace,
      BitsPerComponent: image.bitsPerComponent,
      Filter: image.filter,
    };
    if (image.predictor) {
      dict.DecodeParms = {
        Predictor: 15,
        Colors: image.predictor.colors,
        BitsPerComponent: image.predictor.bitsPerComponent,
        Columns: image.predictor.columns,
      };
    }
    if (softMask) dict.SMask = softMask;
    return PDFRawStream.of(context.obj(dict as never) as unknown as PDFDict, image.data);
  }

  async finish(): Promise<PdfOutcome> {
    const { context } = this.writer;
    const options = this.options;
    if (this.font?.used) await this.font.embed(this.writer);
    await this.writer.writeObject(this.pagesRef, context.obj({ Type: 'Pages', Kids: this.kids, Count: this.kids.length }));

    // The id: a digest of the key and of everything written so far (so it changes with the content).
    const id = createHash('sha256').update(options.documentKey).update(this.writer.digestSoFar()).digest().subarray(0, 16);
    const documentId = `uuid:${formatUuid(id)}`;
    const xmp = Buffer.from(
      renderXmp({
        title: options.title,
        producer: options.producer,
        creatorTool: options.producer,
        created: options.created,
        documentId,
        pdfa: options.format === 'pdfa-2b',
      }),
      'utf8',
    );
    // PDF/A: the metadata stream is not compressed, so that any tool can find it.
    const metadata = await this.writer.add(PDFRawStream.of(context.obj({ Type: 'Metadata', Subtype: 'XML' }) as unknown as PDFDict, xmp));
    const catalog: Record<string, unknown> = { Type: 'Catalog', Pages: this.pagesRef, Metadata: metadata };
    if (options.format === 'pdfa-2b') {
      const profile = await this.writer.add(
        PDFRawStream.of(context.obj({ N: 3, Filter: 'FlateDecode' }) as unknown as PDFDict, deflateSync(options.iccProfile)),
      );
      catalog.OutputIntents = [
        {
          Type: 'OutputIntent',
          S: 'GTS_PDFA1',
          OutputConditionIdentifier: PDFString.of('sRGB IEC61966-2.1'),
          RegistryName: PDFString.of('http://www.color.org'),
          Info: PDFString.of('sRGB IEC61966-2.1'),
          DestOutputProfile: profile,
        },
      ];
    }
    const root = await this.writer.add(context.obj(catalog as never));
    const date = PDFString.of(pdfDate(options.created));
    const info = await this.writer.add(
      context.obj({
        Title: PDFHexString.fromText(options.title),
        Producer: PDFHexString.fromText(options.producer),
        Creator: PDFHexString.fromText(options.producer),
        CreationDate: date,
        ModDate: date,
      }),
    );
    const { bytes } = await this.writer.finish({ root, info, id });
    return { bytes, sha256: this.writer.digestSoFar().toString('hex'), pages: this.kids.length };
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** A number for a content stream: at most 3 decimals, no exponent, no `-0`. */
function num(value: number): string {
  const text = (Math.round(value * 1000) / 1000).toFixed(3).replace(/\.?0+$/, '');
  return text === '-0' ? '0' : text;
}

function formatUuid(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The maps between the page turned upright (`turn` clockwise) and the image `width` x `height`. */
function uprightFrame(turn: 90 | 180 | 270, width: number, height: number): ReturnType<typeof turnMaps> {
  // turnMaps takes the upright page's own size: a quarter turn swaps the sides
  return turn === 180 ? turnMaps(turn, width, height) : turnMaps(turn, height, width);
}

/** A line as it lies on the page turned upright (its words keep their order). */
function lineInFrame(line: ExportLine, map: (p: Point) => Point): ExportLine {
  return {
    ...line,
    polygon: line.polygon.map(map),
    box: mapBox(line.box, map),
    baseline: line.baseline?.map(map) ?? null,
    words: line.words.map((word) => ({ ...word, box: mapBox(word.box, map), polygon: word.polygon.map(map) })),
  };
}
