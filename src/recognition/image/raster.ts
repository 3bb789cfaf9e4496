// An 8-bit interleaved RGB raster, the one in-memory form of a page image, and the
// sampling the later steps need (bilinear, area-averaged when shrinking).
import type { RotatedRect } from '../page/geometry.ts';

export interface RgbImage {
  /** width * height * 3 bytes, row-major, R G B. */
  data: Uint8Array;
  width: number;
  height: number;
}

/** Bilinear sample at a real-valued position (pixel centres at +0.5) into `out[0..2]`; outside the page: white. */
export function sampleBilinear(image: RgbImage, x: number, y: number, out: Float64Array): void {
  const fx = x - 0.5;
  const fy = y - 0.5;
  const x0 = Math.floor(fx);
  const y0 = Math.floor(fy);
  const ax = fx - x0;
  const ay = fy - y0;
  const { data, width, height } = image;
  const inside = x0 >= 0 && y0 >= 0 && x0 + 1 < width && y0 + 1 < height;
  for (let c = 0; c < 3; c += 1) {
    if (!inside) {
      out[c] = edgeSample(image, x0, y0, ax, ay, c);
      continue;
    }
    const i = (y0 * width + x0) * 3 + c;
    const j = i + width * 3;
    out[c] = (data[i] * (1 - ax) + data[i + 3] * ax) * (1 - ay) + (data[j] * (1 - ax) + data[j + 3] * ax) * ay;
  }
}

function pixel(image: RgbImage, x: number, y: number, channel: number): number {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height) return 255;
  return image.data[(y * image.width + x) * 3 + channel];
}

/**
 * An oriented patch of the page: `origin` is its top-left corner in page pixels,
 * `ux`/`uy` the page-space vectors of one patch pixel step along its x and y.
 */
export interface PatchFrame {
  origin: readonly [number, number];
  ux: readonly [number, number];
  uy: readonly [number, number];
}

/**
 * How a patch that shrinks the page is filtered: 'area' averages a grid of bilinear samples an output
 * pixel (so that thin pen strokes do not alias); 'bilinear' takes one bilinear sample an output pixel,
 * as a model trained on plainly resized crops saw them (PaddleOCR resizes its line crops with OpenCV's
 * bilinear filter). Either way a patch that shrinks the page by 2 or more is cut from the page halved.
 */
export type Resampling = 'area' | 'bilinear';

/**
 * Samples an oriented patch of `width` x `height` output pixels (3 channels, 0..255 floats).
 * With 'area' resampling, when one output pixel covers more than one page pixel, averages a grid
 * of samples so that shrinking does not alias thin pen strokes. A patch that shrinks the page by 2
 * or more along both axes is sampled from the page halved (as often as it takes): a line shrunk 4
 * times is then one bilinear sample an output pixel of the page at a quarter, not 16 of the page
 * (docs/recognition.md, "Line crops").
 */
export function samplePatch(
  image: RgbImage,
  frame: PatchFrame,
  width: number,
  height: number,
  resampling: Resampling = 'area',
): Float32Array {
  const stepX = Math.hypot(frame.ux[0], frame.ux[1]);
  const stepY = Math.hypot(frame.uy[0], frame.uy[1]);
  if (stepX >= 2 && stepY >= 2 && image.width > 1 && image.height > 1) {
    const half = halvedFrame(frame);
    const [top, bottom] = patchRows(half, width, height);
    return samplePatch(halvedRows(image, top, bottom), half, width, height, resampling);
  }
  const grid = (step: number): number => (resampling === 'bilinear' ? 1 : Math.min(4, Math.max(1, Math.ceil(step - 0.25))));
  return sampleGrid(image, frame, width, height, grid(stepX), grid(stepY));
}

/** samplePatch on `image` itself: the mean of an nx x ny grid of bilinear samples an output pixel. */
function sampleGrid(image: RgbImage, frame: PatchFrame, width: number, height: number, nx: number, ny: number): Float32Array {
  const out = new Float32Array(width * height * 3);
  const weight = 1 / (nx * ny);
  // sampleBilinear inlined and each sub-sample's offsets computed once, with the same arithmetic in
  // the same order, so the output is the same to the bit (test/unit/recognition-image.test.ts).
  // Cropping the lines was 30 % of a handwritten page's main-thread time; this takes 30 % off it.
  const { data, width: pageWidth, height: pageHeight } = image;
  const row = pageWidth * 3;
  const [ox, oy] = frame.origin;
  const alongX = subSampleOffsets(width, nx, frame.ux);
  const alongY = subSampleOffsets(height, ny, frame.uy);
  for (let v = 0; v < height; v += 1) {
    for (let u = 0; u < width; u += 1) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let sy = 0; sy < ny; sy += 1) {
        const ry = (v * ny + sy) * 2;
        for (let sx = 0; sx < nx; sx += 1) {
          const rx = (u * nx + sx) * 2;
          const fx = ox + alongX[rx] + alongY[ry] - 0.5;
          const fy = oy + alongX[rx + 1] + alongY[ry + 1] - 0.5;
          const x0 = Math.floor(fx);
          const y0 = Math.floor(fy);
          const ax = fx - x0;
          const ay = fy - y0;
          if (x0 >= 0 && y0 >= 0 && x0 + 1 < pageWidth && y0 + 1 < pageHeight) {
            const i = (y0 * pageWidth + x0) * 3;
            const j = i + row;
            r += (data[i] * (1 - ax) + data[i + 3] * ax) * (1 - ay) + (data[j] * (1 - ax) + data[j + 3] * ax) * ay;
            g += (data[i + 1] * (1 - ax) + data[i + 4] * ax) * (1 - ay) + (data[j + 1] * (1 - ax) + data[j + 4] * ax) * ay;
            b += (data[i + 2] * (1 - ax) + data[i + 5] * ax) * (1 - ay) + (data[j + 2] * (1 - ax) + data[j + 5] * ax) * ay;
          } else {
            r += edgeSample(image, x0, y0, ax, ay, 0);
            g += edgeSample(image, x0, y0, ax, ay, 1);
            b += edgeSample(image, x0, y0, ax, ay, 2);
          }
        }
      }
      const o = (v * width + u) * 3;
      out[o] = r * weight;
      out[o + 1] = g * weight;
      out[o + 2] = b * weight;
    }
  }
  return out;
}

/** A raster's half (see halved), made a row at a time as patches need them; `made` marks the rows made. */
interface Half {
  image: RgbImage;
  made: Uint8Array;
}

const halves = new WeakMap<Uint8Array, Half>();
/** The raster each half was made from, so that a half of a half can make the rows it reads first. */
const halvedFrom = new WeakMap<Uint8Array, RgbImage>();

/**
 * The raster at half its width and height (rounded up), each pixel the rounded mean of a 2 x 2
 * block, white past the edge as samples there are; made once per raster (kept while the raster is).
 */
export function halved(image: RgbImage): RgbImage {
  return halvedRows(image, 0, Math.ceil(image.height / 2) - 1);
}

/**
 * The raster halved (as halved()), with at least its rows `top` to `bottom` made: a page whose few
 * lines shrink 2 times or more (a printed page's lines that our recognizer reads) is not halved
 * whole for them. Each row is the same whenever it is made.
 */
function halvedRows(image: RgbImage, top: number, bottom: number): RgbImage {
  let half = halves.get(image.data);
  if (!half) {
    const width = Math.ceil(image.width / 2);
    const height = Math.ceil(image.height / 2);
    half = { image: { data: new Uint8Array(width * height * 3), width, height }, made: new Uint8Array(height) };
    halves.set(image.data, half);
    halvedFrom.set(half.image.data, image);
  }
  const from = Math.max(0, top);
  const to = Math.min(half.image.height - 1, bottom);
  if (from > to) return half.image;
  const source = halvedFrom.get(image.data);
  if (source) halvedRows(source, 2 * from, 2 * to + 1);
  for (let y = from; y <= to; y += 1) {
    if (half.made[y]) continue;
    halveRow(image, half.image, y);
    half.made[y] = 1;
  }
  return half.image;
}

/** Row `y` of `half`: pairs of columns of rows 2y and 2y + 1; a last odd row or column is paired with white. */
function halveRow(image: RgbImage, half: RgbImage, y: number): void {
  const { data, width, height } = image;
  const out = half.data;
  const row = width * 3;
  const pairs = width >> 1;
  let i = 2 * y * row;
  let to = y * half.width * 3;
  const end = i + pairs * 6;
  const below = 2 * y + 1 < height;
  if (below)
    for (let j = i + row; i < end; i += 6, j += 6) {
      out[to++] = (data[i] + data[i + 3] + data[j] + data[j + 3] + 2) >> 2;
      out[to++] = (data[i + 1] + data[i + 4] + data[j + 1] + data[j + 4] + 2) >> 2;
      out[to++] = (data[i + 2] + data[i + 5] + data[j + 2] + data[j + 5] + 2) >> 2;
    }
  else
    for (; i < end; i += 6) {
      out[to++] = (data[i] + data[i + 3] + 512) >> 2;
      out[to++] = (data[i + 1] + data[i + 4] + 512) >> 2;
      out[to++] = (data[i + 2] + data[i + 5] + 512) >> 2;
    }
  if (pairs < half.width) {
    for (let c = 0; c < 3; c += 1) out[to + c] = (data[i + c] + (below ? data[i + row + c] : 255) + 512) >> 2;
  }
}

/** The rows of `image` a patch's bilinear samples may read: its corners' extent, a row more each way. */
function patchRows(frame: PatchFrame, width: number, height: number): [number, number] {
  const ys = [
    frame.origin[1],
    frame.origin[1] + width * frame.ux[1],
    frame.origin[1] + height * frame.uy[1],
    frame.origin[1] + width * frame.ux[1] + height * frame.uy[1],
  ];
  return [Math.floor(Math.min(...ys)) - 1, Math.ceil(Math.max(...ys)) + 1];
}

/** The same patch in the coordinates of the halved raster (a page point p is p / 2 there). */
function halvedFrame(frame: PatchFrame): PatchFrame {
  return {
    origin: [frame.origin[0] / 2, frame.origin[1] / 2],
    ux: [frame.ux[0] / 2, frame.ux[1] / 2],
    uy: [frame.uy[0] / 2, frame.uy[1] / 2],
  };
}

/**
 * The page-space offsets of each sub-sample along one patch axis, as [x, y] pairs: (i + (s + 0.5) / n)
 * times the axis's step, for output pixel i < `count` and sub-sample s < `n`.
 */
function subSampleOffsets(count: number, n: number, step: readonly [number, number]): Float64Array {
  const offsets = new Float64Array(count * n * 2);
  for (let i = 0; i < count; i += 1)
    for (let s = 0; s < n; s += 1) {
      const f = i + (s + 0.5) / n;
      offsets[(i * n + s) * 2] = f * step[0];
      offsets[(i * n + s) * 2 + 1] = f * step[1];
    }
  return offsets;
}

/** One channel of a bilinear sample whose four pixels are not all on the page (white outside). */
function edgeSample(image: RgbImage, x0: number, y0: number, ax: number, ay: number, channel: number): number {
  const p00 = pixel(image, x0, y0, channel);
  const p10 = pixel(image, x0 + 1, y0, channel);
  const p01 = pixel(image, x0, y0 + 1, channel);
  const p11 = pixel(image, x0 + 1, y0 + 1, channel);
  return (p00 * (1 - ax) + p10 * ax) * (1 - ay) + (p01 * (1 - ax) + p11 * ax) * ay;
}

/** Page point of patch coordinates (u, v) (in output pixels, corners at integers). */
export function patchToPage(frame: PatchFrame, u: number, v: number): [number, number] {
  return [frame.origin[0] + u * frame.ux[0] + v * frame.uy[0], frame.origin[1] + u * frame.ux[1] + v * frame.uy[1]];
}

/**
 * The frame that maps a `width` x `height` patch onto a rotated rectangle of the page,
 * upright in the rectangle's writing direction (or turned half a turn with `flip`).
 */
export function frameForRect(rect: RotatedRect, width: number, height: number, flip = false): PatchFrame {
  const direction = flip ? -1 : 1;
  const cos = Math.cos(rect.angle) * direction;
  const sin = Math.sin(rect.angle) * direction;
  const stepU = rect.width / width;
  const stepV = rect.height / height;
  const ux = [cos * stepU, sin * stepU] as const;
  const uy = [-sin * stepV, cos * stepV] as const;
  const origin = [rect.cx - (width / 2) * ux[0] - (height / 2) * uy[0], rect.cy - (width / 2) * ux[1] - (height / 2) * uy[1]] as const;
  return { origin, ux, uy };
}

/** Mean of R, G and B for rows [top, bottom) of an interleaved RGB patch `width` pixels wide. */
export function greyRows(pixels: Float32Array, width: number, top: number, bottom: number): Float32Array {
  const grey = new Float32Array(width * (bottom - top));
  for (let i = 0; i < grey.length; i += 1) {
    const o = (top * width + i) * 3;
    grey[i] = (pixels[o] + pixels[o + 1] + pixels[o + 2]) / 3;
  }
  return grey;
}

/** Grey levels of the paper (90th percentile) and of the ink (the `inkQuantile` darkest). */
export function paperAndInk(grey: Float32Array, inkQuantile: number): { paper: number; ink: number } {
  // the two order statistics a sort would give, selected (a copy, partitioned in place) without sorting
  const values = Float32Array.from(grey);
  const inkIndex = Math.floor(values.length * inkQuantile);
  const paperIndex = Math.floor(values.length * 0.9);
  const ink = selectInPlace(values, inkIndex, 0, values.length - 1);
  // what lies above inkIndex is not smaller than the ink: the paper is selected among it
  const paper =
    paperIndex >= inkIndex
      ? selectInPlace(values, paperIndex, inkIndex, values.length - 1)
      : selectInPlace(values, paperIndex, 0, inkIndex);
  return { paper, ink };
}

/** The value the k-th place would hold were values[low..high] sorted (Hoare's selection; rearranges that range). */
function selectInPlace(values: Float32Array, k: number, low: number, high: number): number {
  let [left, right] = [low, high];
  while (left < right) {
    const pivot = values[(left + right) >> 1];
    let i = left;
    let j = right;
    while (i <= j) {
      while (values[i] < pivot) i += 1;
      while (values[j] > pivot) j -= 1;
      if (i <= j) {
        const swap = values[i];
        values[i] = values[j];
        values[j] = swap;
        i += 1;
        j -= 1;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else return values[k];
  }
  return values[k];
}

/** Side of the square tiles turnedBy writes, in pixels. */
const TURN_TILE = 64;

/**
 * The raster turned clockwise by a quarter turns (90, 180 or 270°): a page scanned sideways or
 * upside down, read upright. Pixel (x, y) of the turned raster is, in the raster as it was,
 * 90: (y, H - 1 - x); 180: (W - 1 - x, H - 1 - y); 270: (W - 1 - y, x).
 */
export function turnedBy(image: RgbImage, turn: 90 | 180 | 270): RgbImage {
  const { data, width, height } = image;
  const turned = new Uint8Array(data.length);
  const quarter = turn !== 180;
  const outWidth = quarter ? height : width;
  const outHeight = quarter ? width : height;
  // Square tiles of the turned raster, so that the rows a quarter turn reads across stay in the
  // cache while a tile is written: 1.5-2 times as fast as row by row on an 8-Mpx page.
  // from (x, y) to (x + 1, y) of the turned raster, in the raster as it was
  const step = turn === 90 ? -width * 3 : turn === 180 ? -3 : width * 3;
  for (let tileY = 0; tileY < outHeight; tileY += TURN_TILE) {
    const endY = Math.min(tileY + TURN_TILE, outHeight);
    for (let tileX = 0; tileX < outWidth; tileX += TURN_TILE) {
      const endX = Math.min(tileX + TURN_TILE, outWidth);
      for (let y = tileY; y < endY; y += 1) {
        let to = (y * outWidth + tileX) * 3;
        // where (tileX, y) comes from
        let from =
          turn === 90
            ? ((height - 1 - tileX) * width + y) * 3
            : turn === 180
              ? ((height - 1 - y) * width + (width - 1 - tileX)) * 3
              : (tileX * width + (width - 1 - y)) * 3;
        for (let x = tileX; x < endX; x += 1, to += 3, from += step) {
          turned[to] = data[from];
          turned[to + 1] = data[from + 1];
          turned[to + 2] = data[from + 2];
        }
      }
    }
  }
  return { data: turned, width: outWidth, height: outHeight };
}
