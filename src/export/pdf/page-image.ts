// Turns a page image into a PDF image XObject without loss:
// - baseline/progressive 8-bit JPEG (gray or colour): the file's bytes as they are (DCTDecode);
// - PNG without alpha or interlacing: its zlib data as it is (FlateDecode + PNG predictors);
// - anything else (PNG with alpha/interlace/tRNS, TIFF, WebP, GIF, CMYK or 12-bit JPEG, ...):
//   decoded by sharp and re-encoded as PNG (lossless), alpha kept as a soft mask.
// The stored orientation (EXIF) is not applied to the pixels: `orientation` tells the page
// how to draw them (see orientationMatrix).
import type { Metadata } from 'sharp';
import { imageMetadata, openImage } from '../../recognition/image/open-image.ts';
import { ExportError } from '../errors.ts';

export interface PdfImageData {
  width: number;
  height: number;
  filter: 'DCTDecode' | 'FlateDecode';
  /** A device colour space name, or an Indexed colour space over DeviceRGB. */
  colorSpace: 'DeviceGray' | 'DeviceRGB' | { indexed: Buffer };
  bitsPerComponent: number;
  /** PNG predictor parameters for FlateDecode data taken from a PNG. */
  predictor: { colors: number; columns: number; bitsPerComponent: number } | null;
  data: Buffer;
}

export interface PdfImage extends PdfImageData {
  /** EXIF orientation 1..8 of the stored pixels. */
  orientation: number;
  softMask: PdfImageData | null;
  /** How the image went in: `as-is` or the conversion made. */
  route: 'jpeg-as-is' | 'png-as-is' | 'converted-png';
}

export async function preparePdfImage(bytes: Buffer, pageNumber: number): Promise<PdfImage> {
  let metadata: Metadata;
  try {
    metadata = await imageMetadata(bytes);
  } catch (error) {
    throw new ExportError('image_unsupported', `page ${pageNumber}: the page image cannot be read (${(error as Error).message})`, {
      pageNumber,
      cause: error,
    });
  }
  const orientation = metadata.orientation && metadata.orientation >= 1 && metadata.orientation <= 8 ? metadata.orientation : 1;
  try {
    if (isJpeg(bytes)) {
      const jpeg = jpegAsIs(bytes);
      if (jpeg) return { ...jpeg, orientation, softMask: null, route: 'jpeg-as-is' };
    } else if (isPng(bytes)) {
      const png = pngAsIs(bytes);
      if (png) return { ...png, orientation, softMask: null, route: 'png-as-is' };
    }
    return { ...(await convertLosslessly(bytes, metadata)), orientation, route: 'converted-png' };
  } catch (error) {
    if (error instanceof ExportError) throw error;
    throw new ExportError('image_unsupported', `page ${pageNumber}: the page image cannot be embedded (${(error as Error).message})`, {
      pageNumber,
      cause: error,
    });
  }
}

function isJpeg(bytes: Buffer): boolean {
  return bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
function isPng(bytes: Buffer): boolean {
  return bytes.subarray(0, 8).equals(PNG_SIGNATURE);
}

/** The JPEG as it is, when PDF readers decode it the same as image viewers do. */
function jpegAsIs(bytes: Buffer): PdfImageData | null {
  let offset = 2;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1];
    if (marker === 0xff) {
      offset++;
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      offset += 2;
      continue;
    }
    const length = bytes.readUInt16BE(offset + 2);
    // SOF0 baseline, SOF1 extended, SOF2 progressive (Huffman); others (arithmetic, lossless,
    // hierarchical) are not reliably supported by PDF readers.
    if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2) {
      const precision = bytes[offset + 4];
      const height = bytes.readUInt16BE(offset + 5);
      const width = bytes.readUInt16BE(offset + 7);
      const components = bytes[offset + 9];
      if (precision !== 8 || (components !== 1 && components !== 3) || width === 0 || height === 0) return null;
      return {
        width,
        height,
        filter: 'DCTDecode',
        colorSpace: components === 1 ? 'DeviceGray' : 'DeviceRGB',
        bitsPerComponent: 8,
        predictor: null,
        data: bytes,
      };
    }
    if ((marker >= 0xc3 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) || marker === 0xda) return null;
    offset += 2 + length;
  }
  return null;
}

/** The PNG's compressed pixel data as it is, when PDF's Flate + PNG predictors can carry it. */
function pngAsIs(bytes: Buffer): PdfImageData | null {
  let offset = 8;
  let header: { width: number; height: number; bitDepth: number; colorType: number; interlace: number } | null = null;
  let palette: Buffer | null = null;
  const data: Buffer[] = [];
  while (offset + 8 <= bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    if (body.length !== length) return null;
    if (type === 'IHDR') {
      header = {
        width: body.readUInt32BE(0),
        height: body.readUInt32BE(4),
        bitDepth: body[8],
        colorType: body[9],
        interlace: body[12],
      };
    } else if (type === 'PLTE') palette = Buffer.from(body);
    else if (type === 'tRNS') return null;
    else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  if (!header || data.length === 0 || header.interlace !== 0) return null;
  const { width, height, bitDepth, colorType } = header;
  let colors: number;
  let colorSpace: PdfImageData['colorSpace'];
  if (colorType === 0) {
    colors = 1;
    colorSpace = 'DeviceGray';
  } else if (colorType === 2) {
    colors = 3;
    colorSpace = 'DeviceRGB';
  } else if (colorType === 3 && palette && palette.length % 3 === 0 && palette.length > 0) {
    colors = 1;
    colorSpace = { indexed: palette };
  } else {
    return null;
  }
  return {
    width,
    height,
    filter: 'FlateDecode',
    colorSpace,
    bitsPerComponent: bitDepth,
    predictor: { colors, columns: width, bitsPerComponent: bitDepth },
    data: Buffer.concat(data),
  };
}

async function convertLosslessly(bytes: Buffer, metadata: Metadata): Promise<Omit<PdfImage, 'orientation' | 'route'>> {
  const deep = metadata.depth === 'ushort';
  const open = () => openImage(bytes, { limitInputPixels: false, page: 0 });
  const color = (await open()).removeAlpha();
  const gray = (metadata.channels ?? 3) - (metadata.hasAlpha ? 1 : 0) === 1 && metadata.space !== 'cmyk';
  const colorPng = await (deep
    ? color.toColourspace(gray ? 'grey16' : 'rgb16')
    : gray
      ? color.toColourspace('b-w')
      : color.toColourspace('srgb')
  )
    .png({ compressionLevel: 6, adaptiveFiltering: true })
    .toBuffer();
  const base = pngAsIs(colorPng);
  if (!base) throw new Error('sharp produced a PNG that cannot be embedded as it is');
  let softMask: PdfImageData | null = null;
  if (metadata.hasAlpha && !(await (await open()).stats()).isOpaque) {
    const alphaPng = await (await open())
      .extractChannel('alpha')
      .toColourspace('b-w')
      .png({ compressionLevel: 6, adaptiveFiltering: true })
      .toBuffer();
    softMask = pngAsIs(alphaPng);
    if (!softMask) throw new Error('sharp produced an alpha PNG that cannot be embedded as it is');
  }
  return { ...base, softMask };
}

/**
 * The image matrix (`cm`) that draws stored pixels, turned by their EXIF orientation, onto a
 * page of `pageWidth` x `pageHeight` points. `stored` is the pixel size as stored.
 */
export function orientationMatrix(
  orientation: number,
  stored: { width: number; height: number },
  pageWidth: number,
  pageHeight: number,
): [number, number, number, number, number, number] {
  const swapped = orientation >= 5;
  const orientedWidth = swapped ? stored.height : stored.width;
  const orientedHeight = swapped ? stored.width : stored.height;
  const sx = pageWidth / orientedWidth;
  const sy = pageHeight / orientedHeight;
  const W = stored.width;
  const H = stored.height;
  // Stored pixel (x, y from the top) -> displayed pixel, per EXIF orientation.
  const display = (x: number, y: number): [number, number] => {
    switch (orientation) {
      case 2:
        return [W - x, y];
      case 3:
        return [W - x, H - y];
      case 4:
        return [x, H - y];
      case 5:
        return [y, x];
      case 6:
        return [H - y, x];
      case 7:
        return [H - y, W - x];
      case 8:
        return [y, W - x];
      default:
        return [x, y];
    }
  };
  // Image space (u, v) in [0,1]^2 has v up; stored row 0 is at v = 1.
  const toPage = (u: number, v: number): [number, number] => {
    const [dx, dy] = display(u * W, (1 - v) * H);
    return [dx * sx, pageHeight - dy * sy];
  };
  const [e, f] = toPage(0, 0);
  const [ux, uy] = toPage(1, 0);
  const [vx, vy] = toPage(0, 1);
  return [ux - e, uy - f, vx - e, vy - f, e, f];
}
