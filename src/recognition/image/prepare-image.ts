// Image preparation: decode one page image into an upright 8-bit RGB raster.
// Handles EXIF orientation, alpha (flattened onto white), grey, CMYK and 16-bit
// inputs, refuses absurd sizes before decoding, and treats multi-page files
// explicitly (a pyramid or thumbnail pages are ignored; real extra pages are refused).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import type { Metadata, OutputInfo } from 'sharp';
import type { SourceImage } from '../page/page-result.ts';
import { PipelineError } from '../page/errors.ts';
import { imageMetadata, openImage } from './open-image.ts';
import type { RgbImage } from './raster.ts';

/** Raster formats a scan arrives in. Vector or document formats (SVG, PDF) are refused. */
const ACCEPTED_FORMATS = new Set(['jpeg', 'png', 'tiff', 'webp', 'jp2', 'j2k', 'heif', 'gif']);
/** A side longer than this is not a page (2.5 m at 300 dpi), whatever the pixel budget. */
const MAX_SIDE = 30_000;
/**
 * A side shorter than this is not a page: no line of text fits (a handwritten line is 30-150 px
 * high at the 100-300 dpi pages are scanned at). Intake refuses such an image at upload
 * (`image_too_small`, src/intake/scan-zip.ts), so only a page that bypassed it meets it here.
 */
export const MIN_PAGE_SIDE = 16;
/** Further pages at most this fraction of the first page's sides are reduced copies. */
const REDUCED_COPY_RATIO = 0.75;
/**
 * The most pixels the models need of a page (ADR 0040): a larger page is decoded reduced to about
 * this many, its aspect kept (shrink-on-load: JPEG and WebP decode at 1/2, 1/4 or 1/8 of their size;
 * PNG and TIFF stream through the reduction), so that a 100-Mpx scan holds what a 16-Mpx one does.
 * The detector and the segmenter see at most 1280 (built-in) and 864 pixels a side, and a line crop samples at
 * most 4 x 4 page pixels per crop pixel (raster.ts samplePatch): 16 Mpx is an A4 page at 400 dpi,
 * its handwritten lines 120-200 px apart against crops of 32-48 px. Every page up to it (all the
 * fixture and evaluation pages) is decoded as it is, so the models see the same pixels as before.
 */
export const MODEL_PAGE_PIXELS = 16_000_000;
/** Formats libvips decodes in strips (or reduced, for JPEG and WebP) when the result is reduced: the full page is never held. */
const STREAMED_FORMATS = new Set(['jpeg', 'png', 'tiff', 'webp']);

export interface PreparedImage {
  /** The image as sent: its size is the page's, in which every coordinate of the page result lies. */
  source: SourceImage;
  /** The pixels as decoded: the page's size, or reduced when `decodedPixels` asked (`scale`). */
  raster: RgbImage;
  /** Raster pixels per page pixel along x and y: 1 and 1 unless the page was decoded reduced. */
  scale: { x: number; y: number };
  warnings: string[];
}

export interface PrepareImageOptions {
  /** The name to report (e.g. the path inside the submitted ZIP). */
  name: string;
  /** Refuse images with more pixels than this (MAX_IMAGE_PIXELS). */
  maxPixels: number;
  /** Stops a decode that runs in a thread of its own (JPEG 2000) when the page's task ends. */
  signal?: AbortSignal;
  /** Decode a page of more pixels than this reduced to about this many (e.g. MODEL_PAGE_PIXELS); unset: as it is. */
  decodedPixels?: number;
}

export async function prepareImageFile(file: string, options: PrepareImageOptions): Promise<PreparedImage> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new PipelineError('image_unreadable', `cannot read ${options.name}: ${(error as Error).message}`, { cause: error });
  }
  return prepareImage(bytes, options);
}

export async function prepareImage(bytes: Buffer, options: PrepareImageOptions): Promise<PreparedImage> {
  const { name, maxPixels } = options;
  if (bytes.length === 0) throw new PipelineError('image_unreadable', `${name}: empty`);
  const metadata = await readMetadata(bytes, name);
  const format = metadata.format ?? 'unknown';
  if (!ACCEPTED_FORMATS.has(format)) {
    throw new PipelineError(
      'image_unreadable',
      `${name}: ${format} is not a supported page image format (JPEG, PNG, TIFF, WebP, JPEG 2000, HEIF, GIF)`,
    );
  }
  const width = metadata.width ?? 0;
  const height = metadata.height ?? 0;
  checkDimensions(name, width, height, maxPixels);

  const warnings: string[] = [];
  const pages = metadata.pages ?? 1;
  if (pages > 1) await checkExtraPages(bytes, name, width, height, pages, warnings);

  // The page as it stands upright (EXIF orientations 5-8 are a quarter turn), and the size it is decoded at.
  const quarterTurned = (metadata.orientation ?? 1) >= 5;
  const pageWidth = quarterTurned ? height : width;
  const pageHeight = quarterTurned ? width : height;
  const target = decodedSize(pageWidth, pageHeight, options.decodedPixels);

  let decoded: { data: Buffer; info: OutputInfo };
  try {
    const image = (await openImage(bytes, { page: 0, limitInputPixels: maxPixels, failOn: 'truncated' }, options.signal)).autoOrient();
    // fit 'fill' to the exact size chosen: both axes scale by the same factor but for rounding, which `scale` reports.
    if (target) image.resize(target.width, target.height, { fit: 'fill', fastShrinkOnLoad: true });
    decoded = await image
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    // A decode stopped because the page's task ended is not an unreadable image.
    if (options.signal?.aborted) throw options.signal.reason;
    throw new PipelineError('image_unreadable', `${name}: cannot decode the image (${(error as Error).message})`, { cause: error });
  }
  const { info } = decoded;
  if (info.channels !== 3) {
    throw new PipelineError('image_unreadable', `${name}: decoded to ${info.channels} channels, expected RGB`);
  }
  const reduced = target !== null;
  return {
    source: {
      name,
      width: reduced ? pageWidth : info.width,
      height: reduced ? pageHeight : info.height,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      format,
      dpi: metadata.density && metadata.density > 0 ? Math.round(metadata.density) : null,
    },
    raster: {
      data: new Uint8Array(decoded.data.buffer, decoded.data.byteOffset, decoded.data.byteLength),
      width: info.width,
      height: info.height,
    },
    scale: reduced ? { x: info.width / pageWidth, y: info.height / pageHeight } : { x: 1, y: 1 },
    warnings,
  };
}

/** The reduced size a `width` x `height` page is decoded at to hold at most about `limit` pixels; null: as it is. */
function decodedSize(width: number, height: number, limit: number | undefined): { width: number; height: number } | null {
  if (limit === undefined || width * height <= limit) return null;
  const factor = Math.sqrt(limit / (width * height));
  return { width: Math.max(MIN_PAGE_SIDE, Math.round(width * factor)), height: Math.max(MIN_PAGE_SIDE, Math.round(height * factor)) };
}

/**
 * The pixels decoding a page holds at its peak, before anything is decoded (the page's own size
 * otherwise): a page decoded reduced (`decodedPixels`) in a format libvips streams holds the reduced
 * raster only; HEIF, GIF and JPEG 2000 are decoded whole before they are reduced.
 */
export function decodedPixelCount(format: string | undefined, width: number, height: number, decodedPixels?: number): number {
  const pixels = width * height;
  if (decodedPixels === undefined || !STREAMED_FORMATS.has(String(format))) return pixels;
  return Math.min(pixels, decodedPixels);
}

async function readMetadata(bytes: Buffer, name: string): Promise<Metadata> {
  try {
    return await imageMetadata(bytes);
  } catch (error) {
    if (error instanceof PipelineError) throw new PipelineError(error.code, `${name}: ${error.message}`, { cause: error });
    throw new PipelineError('image_unreadable', `${name}: not a readable image (${(error as Error).message})`, { cause: error });
  }
}

function checkDimensions(name: string, width: number, height: number, maxPixels: number): void {
  if (width < MIN_PAGE_SIDE || height < MIN_PAGE_SIDE) {
    throw new PipelineError(
      'image_too_small',
      `${name}: ${width}x${height} pixels; a page image needs at least ${MIN_PAGE_SIDE} pixels a side`,
    );
  }
  if (width > MAX_SIDE || height > MAX_SIDE) {
    throw new PipelineError('image_too_large', `${name}: ${width}x${height} pixels; no side may exceed ${MAX_SIDE} pixels`);
  }
  if (width * height > maxPixels) {
    throw new PipelineError('image_too_large', `${name}: ${width * height} pixels (${width}x${height}); the limit is ${maxPixels}`, {
      setting: 'MAX_IMAGE_PIXELS',
    });
  }
}

async function checkExtraPages(
  bytes: Buffer,
  name: string,
  width: number,
  height: number,
  pages: number,
  warnings: string[],
): Promise<void> {
  for (let page = 1; page < pages; page += 1) {
    const extra = await sharp(bytes, { page })
      .metadata()
      .catch(() => null);
    const reduced =
      extra?.width !== undefined &&
      extra.height !== undefined &&
      extra.width <= width * REDUCED_COPY_RATIO &&
      extra.height <= height * REDUCED_COPY_RATIO;
    if (!reduced) {
      throw new PipelineError(
        'image_multipage',
        `${name}: holds ${pages} pages; submit one image per page (split the file, e.g. one TIFF per page)`,
      );
    }
  }
  warnings.push(`${name}: ignored ${pages - 1} reduced-resolution copies (thumbnail or pyramid pages) stored after the page`);
}
