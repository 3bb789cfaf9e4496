// Opens a stored page image with sharp, whatever format it came in. JPEG 2000, which the prebuilt
// sharp cannot read, is measured from its headers and decoded with OpenJPEG (jpeg2000-*.ts), then
// handed to sharp as raw samples; every other format goes to sharp as it is.
import sharp, { type Metadata, type Sharp, type SharpOptions } from 'sharp';
import { decodeJpeg2000 } from './jpeg2000-decode.ts';
import { PipelineError } from '../page/errors.ts';
import { bufferReader, isJpeg2000, jpeg2000TooLarge, readJpeg2000Header, unsupportedJpeg2000 } from './jpeg2000-header.ts';

/** The image's header as sharp's `metadata()` gives it; for JPEG 2000, without decoding (format `jp2`, or `j2k` for a bare codestream). */
export async function imageMetadata(bytes: Buffer): Promise<Metadata> {
  if (!isJpeg2000(bytes)) return sharp(bytes).metadata();
  const header = await readJpeg2000Header(bufferReader(bytes));
  const unsupported = unsupportedJpeg2000(header);
  if (unsupported) throw new Error(`a JPEG 2000 image sharp cannot be given: ${unsupported}`);
  const tooLarge = jpeg2000TooLarge(header, bytes.length);
  if (tooLarge) throw new PipelineError('image_too_large', `a JPEG 2000 image too large to decode: ${tooLarge}`);
  const channels = header.palette ? 3 : header.components;
  return {
    format: header.container,
    width: header.width,
    height: header.height,
    channels: channels as Metadata['channels'],
    depth: header.bitsPerSample > 8 ? 'ushort' : 'uchar',
    space: channels <= 2 ? 'b-w' : 'srgb',
    hasAlpha: channels === 2 || channels === 4,
    pages: 1,
    ...(header.density ? { density: header.density } : {}),
  } as Metadata;
}

/** A sharp pipeline over the image's pixels (`options` as for `sharp(bytes, options)`; `signal` stops a JPEG 2000 decode). */
export async function openImage(bytes: Buffer, options: SharpOptions = {}, signal?: AbortSignal): Promise<Sharp> {
  if (!isJpeg2000(bytes)) return sharp(bytes, options);
  const { width: headerWidth, height: headerHeight } = await imageMetadata(bytes);
  const limit = options.limitInputPixels;
  if (typeof limit === 'number' && limit > 0 && (headerWidth ?? 0) * (headerHeight ?? 0) > limit)
    throw new Error(`Input image exceeds pixel limit (${headerWidth}x${headerHeight}, limit ${limit})`);
  // A minute, and a second more a megapixel: five times what decoding takes here (docs/benchmarks.md).
  const timeoutMs = 60_000 + ((headerWidth ?? 0) * (headerHeight ?? 0)) / 1000;
  const { data, width, height, channels } = await decodeJpeg2000(bytes, { timeoutMs, signal });
  return sharp(data, { raw: { width, height, channels }, limitInputPixels: options.limitInputPixels });
}
