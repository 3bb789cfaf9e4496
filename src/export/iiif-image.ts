// The IIIF Image API 3 for a page image (docs/iiif.md): the request's
// `{region}/{size}/{rotation}/{quality}.{format}` parsed and checked, and the image made by sharp
// from the page's decoded pixels. Level 1 (regionByPx, regionSquare, sizeByW, sizeByH, sizeByWh)
// and, beyond it, regionByPct, sizeByPct, sizeByConfinedWh, sizeUpscaling, rotationBy90s,
// mirroring, the `gray` quality and PNG. The pixels are those the page's coordinates refer to: the
// image as sent, with its EXIF orientation applied, as recognition saw it.
import sharp from 'sharp';

/** Largest side of an answer; a request for more (upscaling included) is refused with 400. */
export const IIIF_MAX_SIDE = 10_000;
const TILE = 512;

export interface IiifImageRequest {
  region: { x: number; y: number; width: number; height: number };
  size: { width: number; height: number };
  rotation: 0 | 90 | 180 | 270;
  mirror: boolean;
  quality: 'default' | 'color' | 'gray';
  format: 'jpg' | 'png';
}

export class IiifImageError extends Error {
  readonly status: 400 | 501;
  constructor(status: 400 | 501, message: string) {
    super(message);
    this.status = status;
  }
}

/** The image information document (info.json) of a page's service. */
export function iiifImageInfo(serviceId: string, width: number, height: number): object {
  const scaleFactors: number[] = [];
  for (let factor = 1; factor === 1 || Math.max(width, height) / (factor / 2) > TILE; factor *= 2) scaleFactors.push(factor);
  const sizes = scaleFactors
    .slice(1)
    .reverse()
    .map((factor) => ({ width: Math.ceil(width / factor), height: Math.ceil(height / factor) }));
  return {
    '@context': 'http://iiif.io/api/image/3/context.json',
    id: serviceId,
    type: 'ImageService3',
    protocol: 'http://iiif.io/api/image',
    profile: 'level1',
    width,
    height,
    maxWidth: IIIF_MAX_SIDE,
    maxHeight: IIIF_MAX_SIDE,
    sizes,
    tiles: [{ width: TILE, height: TILE, scaleFactors }],
    extraQualities: ['color', 'gray'],
    extraFormats: ['png'],
    extraFeatures: ['regionByPct', 'sizeByPct', 'sizeByConfinedWh', 'sizeUpscaling', 'rotationBy90s', 'mirroring'],
  };
}

const NUMBER = '\\d+(?:\\.\\d+)?';

/** Parses the four path parts; IiifImageError 400 for a malformed or impossible request, 501 for an unsupported one. */
export function parseIiifImageRequest(
  parts: { region: string; size: string; rotation: string; file: string },
  image: { width: number; height: number },
): IiifImageRequest {
  const region = parseRegion(parts.region, image);
  const size = parseSize(parts.size, region);
  const rotationMatch = /^(!?)(\d+(?:\.\d+)?)$/.exec(parts.rotation);
  if (!rotationMatch) throw new IiifImageError(400, `Rotation ${parts.rotation} is not a number.`);
  const degrees = Number(rotationMatch[2]);
  if (degrees > 360) throw new IiifImageError(400, 'Rotation is between 0 and 360.');
  if (!Number.isInteger(degrees) || degrees % 90 !== 0)
    throw new IiifImageError(501, 'Only rotations by multiples of 90 degrees are supported.');
  const file = /^(default|color|gray|bitonal)\.([a-z0-9]+)$/.exec(parts.file);
  if (!file) throw new IiifImageError(400, `${parts.file} is not {quality}.{format}.`);
  if (file[1] === 'bitonal') throw new IiifImageError(501, 'The bitonal quality is not supported.');
  if (file[2] !== 'jpg' && file[2] !== 'png') throw new IiifImageError(501, `The format ${file[2]} is not supported (jpg, png).`);
  return {
    region,
    size,
    rotation: (degrees % 360) as IiifImageRequest['rotation'],
    mirror: rotationMatch[1] === '!',
    quality: file[1] as IiifImageRequest['quality'],
    format: file[2],
  };
}

function parseRegion(text: string, image: { width: number; height: number }): IiifImageRequest['region'] {
  if (text === 'full') return { x: 0, y: 0, width: image.width, height: image.height };
  if (text === 'square') {
    const side = Math.min(image.width, image.height);
    return { x: Math.floor((image.width - side) / 2), y: Math.floor((image.height - side) / 2), width: side, height: side };
  }
  const pct = new RegExp(`^pct:(${NUMBER}),(${NUMBER}),(${NUMBER}),(${NUMBER})$`).exec(text);
  const px = /^(\d+),(\d+),(\d+),(\d+)$/.exec(text);
  let box: number[];
  if (pct) {
    const [x, y, w, h] = pct.slice(1).map(Number);
    box = [
      Math.round((x * image.width) / 100),
      Math.round((y * image.height) / 100),
      Math.round((w * image.width) / 100),
      Math.round((h * image.height) / 100),
    ];
  } else if (px) box = px.slice(1).map(Number);
  else throw new IiifImageError(400, `Region ${text} is not full, square, x,y,w,h or pct:x,y,w,h.`);
  const [x, y, w, h] = box;
  if (w <= 0 || h <= 0) throw new IiifImageError(400, 'The region has no width or height.');
  if (x >= image.width || y >= image.height) throw new IiifImageError(400, 'The region lies outside the image.');
  // A region reaching past the image is cut at its edges (the spec's rule).
  return { x, y, width: Math.min(w, image.width - x), height: Math.min(h, image.height - y) };
}

function parseSize(text: string, region: { width: number; height: number }): { width: number; height: number } {
  const upscale = text.startsWith('^');
  const body = upscale ? text.slice(1) : text;
  let width: number;
  let height: number;
  const pct = new RegExp(`^pct:(${NUMBER})$`).exec(body);
  const wh = /^(!?)(\d*),(\d*)$/.exec(body);
  if (body === 'max') {
    const scale = Math.min(1, IIIF_MAX_SIDE / Math.max(region.width, region.height));
    width = region.width * scale;
    height = region.height * scale;
    if (upscale) {
      const up = IIIF_MAX_SIDE / Math.max(region.width, region.height);
      width = region.width * up;
      height = region.height * up;
    }
  } else if (pct) {
    const factor = Number(pct[1]) / 100;
    width = region.width * factor;
    height = region.height * factor;
  } else if (wh && (wh[2] !== '' || wh[3] !== '')) {
    const [, confined, w, h] = wh;
    if (confined) {
      if (w === '' || h === '') throw new IiifImageError(400, `Size ${text}: !w,h needs both.`);
      const scale = Math.min(Number(w) / region.width, Number(h) / region.height);
      width = region.width * scale;
      height = region.height * scale;
    } else if (w !== '' && h !== '') {
      width = Number(w);
      height = Number(h);
    } else if (w !== '') {
      width = Number(w);
      height = (region.height * width) / region.width;
    } else {
      height = Number(h);
      width = (region.width * height) / region.height;
    }
  } else throw new IiifImageError(400, `Size ${text} is not max, w,, ,h, w,h, !w,h or pct:n (with ^ to upscale).`);
  const size = { width: Math.max(1, Math.round(width)), height: Math.max(1, Math.round(height)) };
  if (!upscale && (size.width > region.width || size.height > region.height))
    throw new IiifImageError(400, `Size ${text} is larger than the region; ask with ^ to upscale.`);
  if (size.width > IIIF_MAX_SIDE || size.height > IIIF_MAX_SIDE)
    throw new IiifImageError(400, `Images are at most ${IIIF_MAX_SIDE} pixels a side.`);
  return size;
}

/** Decoded pixels of a page (8-bit, 1 to 4 channels), as the cache keeps them. */
export interface RawPixels {
  data: Buffer;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
}

/** The answer's bytes and media type. */
export async function renderIiifImage(pixels: RawPixels, request: IiifImageRequest): Promise<{ body: Buffer; type: string }> {
  const { region, size } = request;
  let image = sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: pixels.channels } })
    .extract({ left: region.x, top: region.y, width: region.width, height: region.height })
    .resize({ width: size.width, height: size.height, fit: 'fill' });
  // Mirroring comes before the rotation (the spec's order); sharp applies flop after rotate, so the
  // resized image is made first and turned in a second pipeline.
  if (request.mirror || request.rotation !== 0) {
    const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
    image = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
    if (request.mirror) {
      const mirrored = await image.flop().raw().toBuffer({ resolveWithObject: true });
      image = sharp(mirrored.data, { raw: { width: mirrored.info.width, height: mirrored.info.height, channels: mirrored.info.channels } });
    }
    if (request.rotation !== 0) image = image.rotate(request.rotation);
  }
  if (request.quality === 'gray') image = image.grayscale().toColourspace('b-w');
  if (request.format === 'png') return { body: await image.png({ compressionLevel: 6 }).toBuffer(), type: 'image/png' };
  // JPEG has no alpha: flattened on white.
  return { body: await image.flatten({ background: '#ffffff' }).jpeg({ quality: 85 }).toBuffer(), type: 'image/jpeg' };
}
