// What a page weighs against the pixel budget (pixel-budget.ts), read from its header before
// anything is decoded.
import { imageMetadata } from '../image/open-image.ts';
import { decodedPixelCount } from '../image/prepare-image.ts';

/**
 * What a JPEG 2000 page weighs against the pixel budget, in pixels of any other page: OpenJPEG's
 * decode peaks at about 25 bytes a pixel, sharp's JPEG and PNG decoders at about 3.6 (image
 * preparation of one 48-megapixel RGB page: 1 190 MB against 175 MB above the process's own).
 */
const JPEG2000_PIXEL_WEIGHT = 7;
/** imageMetadata's formats for a JP2 file and a bare codestream. */
const JPEG2000_FORMATS = new Set(['jp2', 'j2k']);

/**
 * The page's pixel count from its header (nothing decoded), weighted by its decoder's memory; 1
 * when unreadable, which decoding then reports. `decodedPixels`: the page is decoded reduced to at
 * most that many pixels (prepare-image.ts), which is what it then holds where its format allows.
 */
export async function pagePixels(bytes: Buffer, decodedPixels?: number): Promise<number> {
  try {
    const { width = 1, height = 1, format } = await imageMetadata(bytes);
    if (JPEG2000_FORMATS.has(String(format))) return width * height * JPEG2000_PIXEL_WEIGHT;
    return decodedPixelCount(format, width, height, decodedPixels);
  } catch {
    return 1;
  }
}
