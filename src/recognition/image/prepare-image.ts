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

export interface PreparedImage {
  source: SourceImage;
  raster: RgbImage;
  warnings: string[];
}

export interface PrepareImageOptions {
  /** The name to report (e.g. the path inside the submitted ZIP). */
  name: string;
  /** Refuse images with more pixels than this (MAX_IMAGE_PIXELS). */
  maxPixels: number;
  /** Stops a decode that runs in a thread of its own (JPEG 2000) when the page's task ends. */
  signal?: AbortSignal;
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

  let decoded: { data: Buffer; info: OutputInfo };
  try {
    decoded = await (await openImage(bytes, { page: 0, limitInputPixels: maxPixels, failOn: 'truncated' }, options.signal))
      .autoOrient()
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
  return {
    source: {
      name,
      width: info.width,
      height: info.height,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      format,
      dpi: metadata.density && metadata.density > 0 ? Math.round(metadata.density) : null,
    },
    raster: {
      data: new Uint8Array(decoded.data.buffer, decoded.data.byteOffset, decoded.data.byteLength),
      width: info.width,
      height: info.height,
    },
    warnings,
  };
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
