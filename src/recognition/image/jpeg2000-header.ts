// The size and sample layout of a JPEG 2000 image, read from its headers without decoding:
// a JP2 file (ISO/IEC 15444-1 Annex I: boxes, the codestream in a `jp2c` box) or a bare
// codestream (.j2k: SOC then SIZ). Both carry the image's extent in the SIZ marker segment.
// Archives and libraries keep their masters as JP2; the prebuilt sharp cannot read it.

/** Reads `length` bytes at `offset` (fewer at the end of the file). */
export type ByteReader = (offset: number, length: number) => Promise<Buffer>;

export interface Jpeg2000Header {
  container: 'jp2' | 'j2k';
  width: number;
  height: number;
  /** Components (channels) in the codestream, before any palette is applied. */
  components: number;
  /** Bits per sample of the first component, 1..38. */
  bitsPerSample: number;
  signed: boolean;
  /** Whether any component is sampled more coarsely than the image grid (XRsiz or YRsiz above 1). */
  subsampled: boolean;
  /** The JP2 colour specification's enumerated colour space (16 sRGB, 17 grey, 18 sYCC, 12 CMYK...), or null. */
  enumeratedColourSpace: number | null;
  /** Whether the JP2 header has a palette box (`pclr`). */
  palette: boolean;
  /** Pixels per inch across, from the JP2 capture resolution (or else the display resolution), or null. */
  density: number | null;
}

export class Jpeg2000HeaderError extends Error {
  override name = 'Jpeg2000HeaderError';
}

const JP2_SIGNATURE = Buffer.from([0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20, 0x0d, 0x0a, 0x87, 0x0a]);
const SOC_SIZ = Buffer.from([0xff, 0x4f, 0xff, 0x51]);
/** More boxes than this in one file, at all levels together, are not a real file (each costs a read). */
const MAX_BOXES = 10_000;

/** `jp2` for a JP2 file's signature box, `j2k` for a bare codestream's SOC and SIZ markers, else null. */
export function jpeg2000Container(head: Buffer): Jpeg2000Header['container'] | null {
  if (head.subarray(0, 12).equals(JP2_SIGNATURE)) return 'jp2';
  if (head.subarray(0, 4).equals(SOC_SIZ)) return 'j2k';
  return null;
}

export function isJpeg2000(head: Buffer): boolean {
  return jpeg2000Container(head) !== null;
}

export function bufferReader(bytes: Buffer): ByteReader {
  return async (offset, length) => bytes.subarray(offset, offset + length);
}

export async function readJpeg2000Header(read: ByteReader): Promise<Jpeg2000Header> {
  const head = await read(0, 12);
  if (head.subarray(0, 4).equals(SOC_SIZ))
    return { container: 'j2k', ...(await readSiz(read, 0)), enumeratedColourSpace: null, palette: false, density: null };
  if (!head.equals(JP2_SIGNATURE)) throw new Jpeg2000HeaderError('no JPEG 2000 signature');

  let enumeratedColourSpace: number | null = null;
  let palette = false;
  let captureDensity: number | null = null;
  let displayDensity: number | null = null;
  let codestream: number | null = null;
  const budget = { boxes: MAX_BOXES };
  for (const box of await readBoxes(read, 12, Number.POSITIVE_INFINITY, budget)) {
    if (box.type === 'jp2h') {
      for (const inner of await readBoxes(read, box.contentStart, box.end, budget)) {
        if (inner.type === 'pclr') palette = true;
        if (inner.type === 'colr' && enumeratedColourSpace === null) {
          const colr = await read(inner.contentStart, 7);
          if (colr.length === 7 && colr[0] === 1) enumeratedColourSpace = colr.readUInt32BE(3);
        }
        if (inner.type === 'res ') {
          for (const resolution of await readBoxes(read, inner.contentStart, inner.end, budget)) {
            if (resolution.type === 'resc') captureDensity = await readResolution(read, resolution.contentStart);
            if (resolution.type === 'resd') displayDensity = await readResolution(read, resolution.contentStart);
          }
        }
      }
    } else if (box.type === 'jp2c') {
      codestream = box.contentStart;
      break;
    }
  }
  if (codestream === null) throw new Jpeg2000HeaderError('the JP2 file holds no codestream (jp2c box)');
  const start = await read(codestream, 4);
  if (!start.equals(SOC_SIZ)) throw new Jpeg2000HeaderError('the jp2c box does not start with a codestream (SOC, SIZ)');
  const density = captureDensity ?? displayDensity;
  return { container: 'jp2', ...(await readSiz(read, codestream)), enumeratedColourSpace, palette, density };
}

interface Box {
  type: string;
  contentStart: number;
  /** The offset after the box; Infinity for a last box that runs to the end of the file. */
  end: number;
}

async function readBoxes(read: ByteReader, start: number, end: number, budget: { boxes: number }): Promise<Box[]> {
  const boxes: Box[] = [];
  let offset = start;
  while (offset < end) {
    if ((budget.boxes -= 1) < 0) throw new Jpeg2000HeaderError(`the file has more than ${MAX_BOXES} boxes`);
    const header = await read(offset, 16);
    if (header.length === 0 && end === Number.POSITIVE_INFINITY) break;
    if (header.length < 8) throw new Jpeg2000HeaderError(`a box header at byte ${offset} is cut short`);
    const length = header.readUInt32BE(0);
    const type = header.toString('latin1', 4, 8);
    let headerLength = 8;
    let boxEnd: number;
    if (length === 0) boxEnd = end;
    else if (length === 1) {
      if (header.length < 16) throw new Jpeg2000HeaderError(`the box "${type}" at byte ${offset} is cut short`);
      headerLength = 16;
      boxEnd = offset + Number(header.readBigUInt64BE(8));
    } else boxEnd = offset + length;
    if (boxEnd < offset + headerLength || boxEnd > end)
      throw new Jpeg2000HeaderError(`the box "${type}" at byte ${offset} has an impossible length`);
    boxes.push({ type, contentStart: offset + headerLength, end: boxEnd });
    if (boxEnd === Number.POSITIVE_INFINITY) break;
    offset = boxEnd;
  }
  return boxes;
}

const METRES_PER_INCH = 0.0254;

/** The horizontal resolution of a `resc` or `resd` box (I.5.3.7: HR = HRcN / HRcD × 10^HRcE grid points a metre), in pixels per inch. */
async function readResolution(read: ByteReader, offset: number): Promise<number | null> {
  const box = await read(offset, 10);
  if (box.length < 10) return null;
  const numerator = box.readUInt16BE(4);
  const denominator = box.readUInt16BE(6);
  const exponent = box.readInt8(9);
  if (numerator === 0 || denominator === 0) return null;
  return (numerator / denominator) * 10 ** exponent * METRES_PER_INCH;
}

/** The SIZ marker segment right after SOC at `offset` (ISO/IEC 15444-1 A.5.1). */
async function readSiz(
  read: ByteReader,
  offset: number,
): Promise<Omit<Jpeg2000Header, 'container' | 'enumeratedColourSpace' | 'palette' | 'density'>> {
  const fixed = await read(offset + 4, 40);
  if (fixed.length < 40) throw new Jpeg2000HeaderError('the SIZ marker segment is cut short');
  const sizLength = fixed.readUInt16BE(0);
  const [xsiz, ysiz, xosiz, yosiz] = [4, 8, 12, 16].map((at) => fixed.readUInt32BE(at));
  const components = fixed.readUInt16BE(36);
  if (components < 1 || components > 16_384 || sizLength !== 38 + 3 * components)
    throw new Jpeg2000HeaderError(`the SIZ marker segment is malformed (${components} components, length ${sizLength})`);
  const width = xsiz - xosiz;
  const height = ysiz - yosiz;
  if (width <= 0 || height <= 0) throw new Jpeg2000HeaderError(`the image extent is empty (${xsiz}−${xosiz} × ${ysiz}−${yosiz})`);
  const perComponent = await read(offset + 4 + 38, 3 * components);
  if (perComponent.length < 3 * components) throw new Jpeg2000HeaderError('the SIZ marker segment is cut short');
  let subsampled = false;
  for (let component = 0; component < components; component += 1) {
    if (perComponent[3 * component + 1] !== 1 || perComponent[3 * component + 2] !== 1) subsampled = true;
  }
  const ssiz = perComponent[0];
  return { width, height, components, bitsPerSample: (ssiz & 0x7f) + 1, signed: (ssiz & 0x80) !== 0, subsampled };
}

/** JP2 enumerated colour spaces (Table I.10) read as they are: bi-level, sRGB, greyscale, e-sRGB. */
const READABLE_COLOUR_SPACES = new Set([0, 15, 16, 17, 20]);
const JP2_COLOUR_SPACES: Record<number, string> = {
  1: 'YCbCr',
  3: 'YCbCr',
  4: 'YCbCr',
  9: 'PhotoYCC',
  11: 'CMY',
  12: 'CMYK',
  13: 'YCCK',
  14: 'CIELab',
  18: 'sYCC',
  19: 'CIEJab',
  21: 'ROMM-RGB',
  22: 'YPbPr',
  23: 'e-sYCC',
};

/** Why the image is a JPEG 2000 variant the service cannot read as a page, or null when it can. */
export function unsupportedJpeg2000(header: Jpeg2000Header): string | null {
  const space = header.enumeratedColourSpace;
  if (space !== null && !READABLE_COLOUR_SPACES.has(space))
    return `its colour space is ${JP2_COLOUR_SPACES[space] ?? `number ${space}`}; convert it to RGB or grey`;
  if (header.subsampled) return 'its components are subsampled; convert it to RGB or grey without subsampling';
  if (header.bitsPerSample > 16) return `it has ${header.bitsPerSample} bits a sample; at most 16 are supported`;
  if (!header.palette && header.components !== 1 && header.components !== 3) {
    const what = COMPONENT_LAYOUTS[header.components] ?? `${header.components} components`;
    return `it has ${what}; the JPEG 2000 decoder reads grey (1 component) or colour (3): save it without the extra channels`;
  }
  return null;
}

/** What 2 and 4 components of a page usually are. */
const COMPONENT_LAYOUTS: Record<number, string> = { 2: '2 components (grey and alpha)', 4: '4 components (colour and alpha)' };

/** The most memory the JPEG 2000 decoder (OpenJPEG in WebAssembly, @cornerstonejs/codec-openjpeg) can address. */
const DECODER_HEAP_BYTES = 2 ** 31;

/**
 * The decoder memory an image needs, measured (docs/intake.md, "JPEG 2000"): OpenJPEG holds every
 * sample as a 32-bit integer, and the output as 1 or 2 bytes; the codestream is in it twice (its
 * copy and the code-blocks); 64 MiB for the rest. A 120-Mpx RGB page decodes at 8 bits (1.8 GiB
 * of the 2 GiB) and fails at 16 (2.0 GiB predicted).
 */
export function jpeg2000DecodeBytes(header: Jpeg2000Header, fileBytes: number): number {
  const samples = header.width * header.height * (header.palette ? 3 : header.components);
  return samples * (4 + (header.bitsPerSample > 8 ? 2 : 1)) + 2 * fileBytes + 64 * 2 ** 20;
}

/** Why the image is too large for the decoder's memory, or null when it fits. */
export function jpeg2000TooLarge(header: Jpeg2000Header, fileBytes: number): string | null {
  const needed = jpeg2000DecodeBytes(header, fileBytes);
  if (needed <= DECODER_HEAP_BYTES) return null;
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
  const depth = header.bitsPerSample > 8 ? ` at ${header.bitsPerSample} bits` : '';
  return (
    `decoding ${header.width}×${header.height} pixels${depth} needs about ${gib(needed)} GiB, more than the ` +
    `${gib(DECODER_HEAP_BYTES)} GiB the JPEG 2000 decoder has; send it as TIFF or PNG${depth ? ', or at 8 bits' : ''}`
  );
}
