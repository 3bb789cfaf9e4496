// Recognises page images by their first bytes (magic numbers), never by file name.
// Accepted: the formats every later step reads through sharp/libvips (JPEG, PNG, TIFF
// including BigTIFF, WebP), and JPEG 2000 (a JP2 file or a bare codestream), which they read
// through OpenJPEG (src/recognition/image/open-image.ts). Other image formats are recognised only
// to give a precise refusal ("GIF is not supported") instead of "not an image".
import { jpeg2000Container } from '../recognition/image/jpeg2000-header.ts';

export const ACCEPTED_IMAGE_FORMATS = ['jpeg', 'png', 'tiff', 'webp', 'jp2', 'j2k'] as const;
export type ImageFormat = (typeof ACCEPTED_IMAGE_FORMATS)[number];

export const IMAGE_EXTENSIONS: Record<ImageFormat, string> = { jpeg: 'jpg', png: 'png', tiff: 'tif', webp: 'webp', jp2: 'jp2', j2k: 'j2k' };

/** The accepted formats as a client reads them, for error details. */
export const ACCEPTED_FORMAT_NAMES = 'JPEG, PNG, TIFF, WebP or JPEG 2000';

export type UnsupportedImageFormat = 'gif' | 'bmp' | 'jpeg-xl' | 'heif' | 'avif' | 'pdf' | 'psd';

export type ImageTypeResult =
  | { kind: 'image'; format: ImageFormat; extension: string }
  | { kind: 'unsupported'; format: UnsupportedImageFormat }
  | { kind: 'unknown' };

/** How many leading bytes `detectImageType` needs to decide. */
export const IMAGE_SNIFF_BYTES = 32;

const HEIF_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'mif1', 'msf1']);
const AVIF_BRANDS = new Set(['avif', 'avis']);
const BMP_DIB_HEADER_SIZES = new Set([12, 16, 40, 52, 56, 64, 108, 124]);

function startsWith(head: Buffer, bytes: readonly number[], offset = 0): boolean {
  if (head.length < offset + bytes.length) return false;
  return bytes.every((byte, index) => head[offset + index] === byte);
}

function ascii(head: Buffer, start: number, end: number): string {
  return head.length >= end ? head.toString('latin1', start, end) : '';
}

export function detectImageType(head: Buffer): ImageTypeResult {
  const image = (format: ImageFormat): ImageTypeResult => ({ kind: 'image', format, extension: IMAGE_EXTENSIONS[format] });
  const unsupported = (format: UnsupportedImageFormat): ImageTypeResult => ({ kind: 'unsupported', format });

  if (startsWith(head, [0xff, 0xd8, 0xff])) return image('jpeg');
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return image('png');
  if (
    startsWith(head, [0x49, 0x49, 0x2a, 0x00]) ||
    startsWith(head, [0x4d, 0x4d, 0x00, 0x2a]) ||
    startsWith(head, [0x49, 0x49, 0x2b, 0x00]) ||
    startsWith(head, [0x4d, 0x4d, 0x00, 0x2b])
  ) {
    return image('tiff');
  }
  if (ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP') return image('webp');

  const magic6 = ascii(head, 0, 6);
  if (magic6 === 'GIF87a' || magic6 === 'GIF89a') return unsupported('gif');
  if (ascii(head, 0, 2) === 'BM' && head.length >= 18 && BMP_DIB_HEADER_SIZES.has(head.readUInt32LE(14))) {
    return unsupported('bmp');
  }
  const jpeg2000 = jpeg2000Container(head);
  if (jpeg2000) return image(jpeg2000);
  if (startsWith(head, [0xff, 0x0a])) return unsupported('jpeg-xl');
  if (startsWith(head, [0x00, 0x00, 0x00, 0x0c, 0x4a, 0x58, 0x4c, 0x20, 0x0d, 0x0a, 0x87, 0x0a])) return unsupported('jpeg-xl');
  if (ascii(head, 4, 8) === 'ftyp') {
    const brand = ascii(head, 8, 12);
    if (AVIF_BRANDS.has(brand)) return unsupported('avif');
    if (HEIF_BRANDS.has(brand)) return unsupported('heif');
  }
  if (ascii(head, 0, 5) === '%PDF-') return unsupported('pdf');
  if (ascii(head, 0, 4) === '8BPS') return unsupported('psd');
  return { kind: 'unknown' };
}

const UNSUPPORTED_NAMES: Record<UnsupportedImageFormat, string> = {
  gif: 'GIF',
  bmp: 'BMP',
  'jpeg-xl': 'JPEG XL',
  heif: 'HEIF/HEIC',
  avif: 'AVIF',
  pdf: 'PDF',
  psd: 'Photoshop (PSD)',
};

export function unsupportedFormatName(format: UnsupportedImageFormat): string {
  return UNSUPPORTED_NAMES[format];
}
