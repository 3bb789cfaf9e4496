// How a page may reach the service other than as a clean greyscale scan: lower or higher
// resolution, tilted on the glass, compressed hard, bitonal (1-bit, as many archives keep their
// scans), on a dark scanner bed, or photographed with a phone. Each condition turns the image's
// bytes into new bytes and says where a point of the original lands, so that the ground truth's
// line outlines can be carried over and line recall measured on the new image.
import sharp from 'sharp';
import type { Point } from '../../src/recognition/page/page-result.ts';
import { mulberry32 } from './seeded-random.ts';

export interface CapturedPage {
  bytes: Buffer;
  width: number;
  height: number;
  /** Where a point of the original image lies in this one. */
  map(point: Point): Point;
}

export interface CaptureCondition {
  name: string;
  describe: string;
  capture(bytes: Buffer): Promise<CapturedPage>;
}

const WHITE = { r: 255, g: 255, b: 255 };
const SCANNER_BED = { r: 28, g: 28, b: 30 };

export const CAPTURE_CONDITIONS: readonly CaptureCondition[] = [
  { name: 'as stored', describe: 'the stored image as it is', capture: asStored },
  {
    name: 'twice the pixels',
    describe: 'scaled ×2 (Lanczos), JPEG 90: the same page at twice the resolution',
    capture: (b) => scaled(b, 2),
  },
  { name: '3/4 the pixels', describe: 'scaled ×0.75 (Lanczos), JPEG 90', capture: (b) => scaled(b, 0.75) },
  { name: 'half the pixels', describe: 'scaled ×0.5 (Lanczos), JPEG 90', capture: (b) => scaled(b, 0.5) },
  { name: 'tilted 3°', describe: 'turned 3° clockwise on white paper, PNG', capture: (b) => tilted(b, 3, WHITE) },
  { name: 'JPEG 15', describe: 'saved again at JPEG quality 15', capture: (b) => recompressed(b, 15) },
  {
    name: 'bitonal',
    describe: "Sauvola's adaptive threshold (k 0.2, a window of 1/40 of the page's width), stored as a 1-bit CCITT G4 TIFF",
    capture: bitonal,
  },
  { name: 'scanner bed', describe: 'the page on a dark scanner lid: 6 % of its size on every side, near black', capture: onScannerBed },
  {
    name: 'phone photo',
    describe: 'light falling off across the page (to 55 %), a warm cast, sensor noise, a slight blur, turned 2° on a dark table, JPEG 80',
    capture: phonePhoto,
  },
];

async function asStored(bytes: Buffer): Promise<CapturedPage> {
  const { width, height } = await sharp(bytes).metadata();
  return { bytes, width: width!, height: height!, map: (point) => point };
}

async function scaled(bytes: Buffer, factor: number): Promise<CapturedPage> {
  const { width, height } = await sharp(bytes).metadata();
  const w = Math.round(width! * factor);
  const h = Math.round(height! * factor);
  const out = await sharp(bytes).resize(w, h, { kernel: 'lanczos3', fit: 'fill' }).jpeg({ quality: 90 }).toBuffer();
  return { bytes: out, width: w, height: h, map: ([x, y]) => [(x * w) / width!, (y * h) / height!] };
}

async function recompressed(bytes: Buffer, quality: number): Promise<CapturedPage> {
  const page = await asStored(bytes);
  return { ...page, bytes: await sharp(bytes).jpeg({ quality }).toBuffer() };
}

/** Turned by `degrees` clockwise about the centre onto a canvas that holds the whole page. */
async function tilted(bytes: Buffer, degrees: number, background: typeof WHITE, format: 'png' | 'jpeg' = 'png'): Promise<CapturedPage> {
  const { width, height } = await sharp(bytes).metadata();
  const turned = sharp(bytes).rotate(degrees, { background });
  const { data, info } = await (format === 'png' ? turned.png() : turned.jpeg({ quality: 80 })).toBuffer({ resolveWithObject: true });
  return { bytes: data, width: info.width, height: info.height, map: turnAbout(width!, height!, info.width, info.height, degrees) };
}

/** A clockwise turn (y pointing down) about the centre of a w × h image, into a W × H canvas centred on it. */
function turnAbout(w: number, h: number, W: number, H: number, degrees: number): (point: Point) => Point {
  const a = (degrees * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  return ([x, y]) => {
    const dx = x - w / 2;
    const dy = y - h / 2;
    return [W / 2 + dx * cos - dy * sin, H / 2 + dx * sin + dy * cos];
  };
}

/**
 * Bitonal as an archive's conversion makes it: Sauvola's adaptive threshold, the standard for
 * document images (k 0.2, R 128, a square window of a fortieth of the page's width), where one
 * global level, such as Otsu's, turns a grey page with a white surround black. Stored as a 1-bit
 * CCITT G4 TIFF.
 */
async function bitonal(bytes: Buffer): Promise<CapturedPage> {
  const { data: grey, info } = await sharp(bytes).greyscale().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = info;
  const out = await sharp(sauvola(grey, width, height, Math.max(15, Math.round(width / 40))), { raw: { width, height, channels: 1 } })
    .toColourspace('b-w')
    .tiff({ bitdepth: 1, compression: 'ccittfax4' })
    .toBuffer();
  return { bytes: out, width, height, map: (point) => point };
}

/** 0 (ink) or 255 per pixel: darker than the window's mean m · (1 + k (s / 128 − 1)), s its deviation. */
export function sauvola(grey: Uint8Array, width: number, height: number, window: number): Buffer {
  // integral images of the values and their squares, one row and column of zeros in front
  const stride = width + 1;
  const sum = new Float64Array(stride * (height + 1));
  const squares = new Float64Array(stride * (height + 1));
  for (let y = 0; y < height; y++) {
    let rowSum = 0;
    let rowSquares = 0;
    for (let x = 0; x < width; x++) {
      const value = grey[y * width + x];
      rowSum += value;
      rowSquares += value * value;
      sum[(y + 1) * stride + x + 1] = sum[y * stride + x + 1] + rowSum;
      squares[(y + 1) * stride + x + 1] = squares[y * stride + x + 1] + rowSquares;
    }
  }
  const half = Math.floor(window / 2);
  const binary = Buffer.alloc(width * height);
  const box = (table: Float64Array, top: number, bottom: number, left: number, right: number) =>
    table[bottom * stride + right] - table[top * stride + right] - table[bottom * stride + left] + table[top * stride + left];
  for (let y = 0; y < height; y++) {
    const top = Math.max(0, y - half);
    const bottom = Math.min(height, y + half + 1);
    for (let x = 0; x < width; x++) {
      const left = Math.max(0, x - half);
      const right = Math.min(width, x + half + 1);
      const area = (bottom - top) * (right - left);
      const mean = box(sum, top, bottom, left, right) / area;
      const deviation = Math.sqrt(Math.max(0, box(squares, top, bottom, left, right) / area - mean * mean));
      binary[y * width + x] = grey[y * width + x] < mean * (1 + SAUVOLA_K * (deviation / 128 - 1)) ? 0 : 255;
    }
  }
  return binary;
}

const SAUVOLA_K = 0.2;

async function onScannerBed(bytes: Buffer): Promise<CapturedPage> {
  const { width, height } = await sharp(bytes).metadata();
  const dx = Math.round(width! * 0.06);
  const dy = Math.round(height! * 0.06);
  const out = await sharp(bytes)
    .extend({ top: dy, bottom: dy, left: dx, right: dx, background: SCANNER_BED })
    .jpeg({ quality: 90 })
    .toBuffer();
  return { bytes: out, width: width! + 2 * dx, height: height! + 2 * dy, map: ([x, y]) => [x + dx, y + dy] };
}

async function phonePhoto(bytes: Buffer): Promise<CapturedPage> {
  const { data, info } = await sharp(bytes).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  const { width, height, channels } = info;
  const lit = Buffer.alloc(width * height * 3);
  const random = seededNormal(7);
  const cast = [1, 0.92, 0.78];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      // the lamp in the top left corner: full light there, 55 % in the far corner
      const falloff = 1 - 0.45 * Math.min(1, Math.hypot(x / width, y / height) / Math.SQRT2) ** 1.5;
      const source = (y * width + x) * channels;
      const noise = 5 * random();
      for (let c = 0; c < 3; c++) {
        const value = data[source + Math.min(c, channels - 1)] * falloff * cast[c] + noise;
        lit[(y * width + x) * 3 + c] = Math.max(0, Math.min(255, Math.round(value)));
      }
    }
  }
  const blurred = await sharp(lit, { raw: { width, height, channels: 3 } })
    .blur(0.8)
    .jpeg({ quality: 95 })
    .toBuffer();
  return tilted(blurred, 2, SCANNER_BED, 'jpeg');
}

/** Standard normal draws from a seeded generator (mulberry32 and Box–Muller), so every run photographs alike. */
function seededNormal(seed: number): () => number {
  const uniform = mulberry32(seed);
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}
