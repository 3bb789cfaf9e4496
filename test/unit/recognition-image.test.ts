// Image preparation on real encoded images (made with sharp): orientation, colour
// spaces, bit depths, alpha, limits, corrupt input and multi-page files.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import sharp from 'sharp';
import { PipelineError, type PipelineErrorCode } from '../../src/recognition/page/errors.ts';
import { decodedPixelCount, MODEL_PAGE_PIXELS, prepareImage } from '../../src/recognition/image/prepare-image.ts';
import {
  frameForRect,
  halved,
  paperAndInk,
  sampleBilinear,
  samplePatch,
  type PatchFrame,
  type Resampling,
  type RgbImage,
} from '../../src/recognition/image/raster.ts';

const options = { name: 'scan.img', maxPixels: 100_000_000 };

function solid(width: number, height: number, colour: { r: number; g: number; b: number; alpha?: number }, channels: 3 | 4 = 3) {
  return sharp({ create: { width, height, channels, background: colour } });
}

function pixelAt(prepared: Awaited<ReturnType<typeof prepareImage>>, x: number, y: number): number[] {
  const i = (y * prepared.raster.width + x) * 3;
  return Array.from(prepared.raster.data.subarray(i, i + 3));
}

async function rejectsWith(promise: Promise<unknown>, code: PipelineErrorCode, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof PipelineError, String(error));
    assert.equal(error.code, code, error.message);
    if (message) assert.match(error.message, message);
    return true;
  });
}

test('a JPEG is decoded to RGB with its name, size, format, resolution and digest', async () => {
  const bytes = await solid(60, 40, { r: 200, g: 30, b: 40 }).jpeg({ quality: 100 }).withMetadata({ density: 300 }).toBuffer();
  const prepared = await prepareImage(bytes, options);
  assert.deepEqual(prepared.source, {
    name: 'scan.img',
    width: 60,
    height: 40,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    format: 'jpeg',
    dpi: 300,
  });
  assert.equal(prepared.raster.data.length, 60 * 40 * 3);
  const [r, g, b] = pixelAt(prepared, 30, 20);
  assert.ok(Math.abs(r - 200) < 4 && Math.abs(g - 30) < 4 && Math.abs(b - 40) < 4, `${r},${g},${b}`);
  assert.deepEqual(prepared.warnings, []);
});

test('EXIF orientation is applied: a sideways photo comes out upright', async () => {
  const bytes = await solid(50, 40, { r: 10, g: 20, b: 30 }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
  const prepared = await prepareImage(bytes, options);
  assert.deepEqual([prepared.source.width, prepared.source.height], [40, 50]);
});

test('a page over decodedPixels is decoded reduced, its aspect kept; its source keeps the size as sent, upright', async () => {
  // a real page (a handwritten fixture, 1261 x 1600), decoded with a tenth of its pixels allowed
  const page = await readFile(new URL('../fixtures/pages/copiste_wikitexte_0219_2.jpg', import.meta.url));
  const full = await prepareImage(page, options);
  const reduced = await prepareImage(page, { ...options, decodedPixels: 201_760 });
  assert.deepEqual(reduced.source, full.source);
  assert.deepEqual([reduced.raster.width, reduced.raster.height], [399, 506]);
  assert.equal(reduced.raster.data.length, 399 * 506 * 3);
  assert.deepEqual(reduced.scale, { x: 399 / 1261, y: 506 / 1600 });
  // the same page, smaller: its ink where the full page's is (mean grey of a band across the first lines)
  const band = (prepared: typeof full, top: number, bottom: number) => {
    let sum = 0;
    let count = 0;
    for (let y = Math.round(top * prepared.raster.height); y < bottom * prepared.raster.height; y += 1)
      for (let x = 0; x < prepared.raster.width; x += 1, count += 1) sum += pixelAt(prepared, x, y)[1];
    return sum / count;
  };
  for (const [top, bottom] of [
    [0.1, 0.2],
    [0.45, 0.5],
    [0.9, 1],
  ])
    assert.ok(Math.abs(band(full, top, bottom) - band(reduced, top, bottom)) < 2, `rows ${top}-${bottom}`);
  // a page within the limit is decoded as it is, to the byte
  const within = await prepareImage(page, { ...options, decodedPixels: 1261 * 1600 });
  assert.deepEqual(within.scale, { x: 1, y: 1 });
  assert.ok(Buffer.from(within.raster.data).equals(Buffer.from(full.raster.data)));
  // a sideways photo: the limit applies to the page upright, whose size the source reports
  const sideways = await solid(500, 400, { r: 10, g: 20, b: 30 }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
  const turned = await prepareImage(sideways, { ...options, decodedPixels: 50_000 });
  assert.deepEqual([turned.source.width, turned.source.height], [400, 500]);
  assert.deepEqual([turned.raster.width, turned.raster.height], [200, 250]);
  assert.deepEqual(turned.scale, { x: 0.5, y: 0.5 });
});

test('what decoding a page holds: the reduced raster for formats decoded in strips, the whole page for the others', () => {
  assert.equal(MODEL_PAGE_PIXELS, 16_000_000);
  for (const format of ['jpeg', 'png', 'tiff', 'webp']) {
    assert.equal(decodedPixelCount(format, 10_000, 10_000, MODEL_PAGE_PIXELS), MODEL_PAGE_PIXELS, format);
    assert.equal(decodedPixelCount(format, 3345, 4365, MODEL_PAGE_PIXELS), 3345 * 4365, format);
    assert.equal(decodedPixelCount(format, 10_000, 10_000), 100_000_000, format);
  }
  for (const format of ['heif', 'gif']) assert.equal(decodedPixelCount(format, 10_000, 10_000, MODEL_PAGE_PIXELS), 100_000_000, format);
});

test('16-bit, grey, transparent and CMYK images all become 8-bit RGB', async () => {
  const sixteen = await prepareImage(await solid(32, 32, { r: 10, g: 200, b: 30 }).toColourspace('rgb16').png().toBuffer(), options);
  assert.deepEqual(pixelAt(sixteen, 5, 5), [10, 200, 30]);

  const grey = await prepareImage(await solid(32, 32, { r: 90, g: 90, b: 90 }).grayscale().toColourspace('b-w').png().toBuffer(), options);
  assert.deepEqual(pixelAt(grey, 5, 5), [90, 90, 90]);

  const transparent = await prepareImage(await solid(32, 32, { r: 0, g: 0, b: 0, alpha: 0 }, 4).png().toBuffer(), options);
  assert.deepEqual(pixelAt(transparent, 5, 5), [255, 255, 255]);

  const cmyk = await prepareImage(
    await solid(32, 32, { r: 51, g: 102, b: 153 }).toColourspace('cmyk').jpeg({ quality: 100 }).toBuffer(),
    options,
  );
  const [r, g, b] = pixelAt(cmyk, 5, 5);
  assert.ok(b > g && g > r, `${r},${g},${b}`);
});

test('absurd sizes are refused with typed errors, before decoding', async () => {
  const page = await solid(400, 300, { r: 255, g: 255, b: 255 }).png().toBuffer();
  await rejectsWith(
    prepareImage(page, { ...options, maxPixels: 100_000 }),
    'image_too_large',
    /120000 pixels \(400x300\); the limit is 100000$/,
  );
  const strip = await solid(31_000, 16, { r: 255, g: 255, b: 255 }).png().toBuffer();
  await rejectsWith(prepareImage(strip, options), 'image_too_large', /no side may exceed 30000 pixels/);
  await rejectsWith(prepareImage(await solid(8, 8, { r: 255, g: 255, b: 255 }).png().toBuffer(), options), 'image_too_small');
});

test('corrupt, empty, truncated and non-raster inputs are unreadable, not crashes', async () => {
  await rejectsWith(prepareImage(Buffer.from('this is not an image'), options), 'image_unreadable', /^scan\.img: not a readable image/);
  await rejectsWith(prepareImage(Buffer.alloc(0), options), 'image_unreadable', /^scan\.img: empty$/);
  const jpeg = await solid(300, 200, { r: 51, g: 102, b: 153 }).jpeg().toBuffer();
  await rejectsWith(prepareImage(jpeg.subarray(0, Math.floor(jpeg.length / 2)), options), 'image_unreadable', /cannot decode/);
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100"/></svg>');
  await rejectsWith(prepareImage(svg, options), 'image_unreadable', /svg is not a supported page image format/);
});

test('a multi-page TIFF is refused; a pyramid of reduced copies is read as its first page', async () => {
  const a = await solid(300, 400, { r: 255, g: 0, b: 0 }).png().toBuffer();
  const b = await solid(300, 400, { r: 0, g: 255, b: 0 }).png().toBuffer();
  const twoPages = await sharp([a, b], { join: { animated: true } })
    .tiff()
    .toBuffer();
  await rejectsWith(prepareImage(twoPages, options), 'image_multipage', /holds 2 pages; submit one image per page/);

  const pyramid = await solid(1200, 1600, { r: 0, g: 0, b: 255 }).tiff({ pyramid: true, tile: true }).toBuffer();
  const prepared = await prepareImage(pyramid, options);
  assert.deepEqual([prepared.source.width, prepared.source.height, prepared.source.format], [1200, 1600, 'tiff']);
  assert.equal(prepared.warnings.length, 1);
  assert.match(prepared.warnings[0], /ignored \d+ reduced-resolution copies/);
});

test('an oriented patch is sampled as bilinear samples averaged over each output pixel (or one, with bilinear resampling), from the page halved while it shrinks 2 times or more', async () => {
  const page = await prepareImage(await readFile(new URL('../fixtures/pages/peraire_test_B.12.japon3_0048.jpg', import.meta.url)), {
    name: 'peraire.jpg',
    maxPixels: 1e9,
  });
  const image = page.raster;
  // The reference: each output pixel the mean of an nx x ny grid of sampleBilinear samples of `source`.
  // With 'bilinear' resampling the grid is one sample, at the output pixel's centre.
  const reference = (source: RgbImage, frame: PatchFrame, width: number, height: number, resampling: Resampling = 'area'): Float32Array => {
    const out = new Float32Array(width * height * 3);
    const grid = (step: readonly [number, number]) =>
      resampling === 'bilinear' ? 1 : Math.min(4, Math.max(1, Math.ceil(Math.hypot(...step) - 0.25)));
    const [nx, ny] = [grid(frame.ux), grid(frame.uy)];
    const rgb = new Float64Array(3);
    for (let v = 0; v < height; v += 1)
      for (let u = 0; u < width; u += 1) {
        const sum = [0, 0, 0];
        for (let sy = 0; sy < ny; sy += 1)
          for (let sx = 0; sx < nx; sx += 1) {
            const [x, y] = [u + (sx + 0.5) / nx, v + (sy + 0.5) / ny];
            sampleBilinear(
              source,
              frame.origin[0] + x * frame.ux[0] + y * frame.uy[0],
              frame.origin[1] + x * frame.ux[1] + y * frame.uy[1],
              rgb,
            );
            for (let c = 0; c < 3; c += 1) sum[c] += rgb[c] as number;
          }
        for (let c = 0; c < 3; c += 1) out[(v * width + u) * 3 + c] = (sum[c] as number) * (1 / (nx * ny));
      }
    return out;
  };
  /** The raster samplePatch reads a frame from (the page halved while both steps are 2 or more) and the frame there. */
  const sampledFrom = (frame: PatchFrame): [RgbImage, PatchFrame] => {
    let [source, scaled] = [image, frame];
    while (Math.hypot(...scaled.ux) >= 2 && Math.hypot(...scaled.uy) >= 2) {
      source = halved(source);
      scaled = {
        origin: [scaled.origin[0] / 2, scaled.origin[1] / 2],
        ux: [scaled.ux[0] / 2, scaled.ux[1] / 2],
        uy: [scaled.uy[0] / 2, scaled.uy[1] / 2],
      };
    }
    return [source, scaled];
  };
  const rects = [
    { cx: 900, cy: 700, width: 1200, height: 90, angle: 0.03, halvings: 1 }, // a line, shrunk about 3 times
    { cx: 400, cy: 1500, width: 300, height: 40, angle: -0.4, halvings: 0 }, // tilted, shrunk 1.25 times across
    { cx: 30, cy: 20, width: 500, height: 160, angle: 0.2, halvings: 2, shrink: 5 }, // past the top-left corner (white there), shrunk 5 times
    { cx: image.width - 10, cy: image.height - 5, width: 90, height: 30, angle: Math.PI, halvings: 0 }, // past the far corner, upside down
    { cx: 1200, cy: 900, width: 60, height: 20, angle: 1.1, halvings: 0 }, // enlarged: one sample a pixel
  ];
  const ink = (patch: Float32Array) => patch.some((value) => value < 120);
  for (const rect of rects) {
    const [width, height] = [Math.max(8, Math.round(rect.width / (rect.shrink ?? 3))), 32];
    const frame = frameForRect(rect, width, height);
    const patch = samplePatch(image, frame, width, height);
    const [source, scaled] = sampledFrom(frame);
    assert.equal(Math.round(Math.log2(image.width / source.width)), rect.halvings, JSON.stringify(rect));
    assert.deepEqual(patch, reference(source, scaled, width, height), JSON.stringify(rect));
    // and close to the grid of samples of the page itself: the halving only averages earlier
    const direct = reference(image, frame, width, height);
    const meanDifference = patch.reduce((sum, value, i) => sum + Math.abs(value - (direct[i] as number)), 0) / patch.length;
    assert.ok(meanDifference < 2, `${JSON.stringify(rect)}: ${meanDifference} grey levels from the page's own samples`);
    if (rect === rects[0]) assert.ok(ink(patch), 'the line holds ink');
    if (rect.cx < 100 || rect.cx > image.width - 100) assert.ok(patch.includes(255), 'white past the page edge');
    // one bilinear sample an output pixel, of the same raster: what the grid averaged, it now takes once
    const plain = samplePatch(image, frame, width, height, 'bilinear');
    assert.deepEqual(plain, reference(source, scaled, width, height, 'bilinear'), `bilinear: ${JSON.stringify(rect)}`);
    const gridded = Math.hypot(...scaled.ux) > 1.25 || Math.hypot(...scaled.uy) > 1.25;
    assert.equal(
      plain.every((value, i) => value === patch[i]),
      !gridded,
      `bilinear differs from area only where area averages: ${JSON.stringify(rect)}`,
    );
  }
});

test('the page halved: each pixel the rounded mean of a 2 x 2 block, a last odd row or column with white', () => {
  // 3 x 3 pixels, R = 10 * x + y, G = 100 + that, B = 200 - that
  const data = new Uint8Array(27);
  for (let y = 0; y < 3; y += 1) for (let x = 0; x < 3; x += 1) data.set([10 * x + y, 100 + 10 * x + y, 200 - 10 * x - y], (y * 3 + x) * 3);
  const half = halved({ data, width: 3, height: 3 });
  assert.deepEqual([half.width, half.height], [2, 2]);
  const r = (x: number, y: number) => (x < 3 && y < 3 ? 10 * x + y : 255);
  const expected = (x: number, y: number) =>
    Math.floor((r(2 * x, 2 * y) + r(2 * x + 1, 2 * y) + r(2 * x, 2 * y + 1) + r(2 * x + 1, 2 * y + 1) + 2) / 4);
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => half.data[i * 3]),
    [expected(0, 0), expected(1, 0), expected(0, 1), expected(1, 1)],
  );
  assert.equal(half.data[1], Math.floor((100 + 110 + 101 + 111 + 2) / 4));
  assert.equal(half.data[3 * 3 + 2], Math.floor((180 + 255 * 3 + 2) / 4));
  // made once per raster
  assert.equal(halved({ data, width: 3, height: 3 }), half);
});

test('a patch that shrinks the page reads a half (and a quarter) made only where it lies, the same as the page halved whole', () => {
  let seed = 11;
  const noise = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 24;
  };
  const page = (): RgbImage => {
    seed = 11;
    return { data: Uint8Array.from({ length: 401 * 303 * 3 }, noise), width: 401, height: 303 };
  };
  const lazily = page();
  const whole = page();
  halved(halved(whole));
  // a line across the middle, turned a little, shrunk about 5 times: read from the page at a quarter
  const frames = [
    frameForRect({ cx: 200, cy: 150, width: 300, height: 40, angle: 0.12 }, 60, 8),
    frameForRect({ cx: 120, cy: 290, width: 200, height: 30, angle: -0.05 }, 90, 12, true),
  ];
  for (const frame of frames)
    for (const resampling of ['area', 'bilinear'] as const)
      assert.deepEqual(samplePatch(lazily, frame, 60, 8, resampling), samplePatch(whole, frame, 60, 8, resampling));
  // the rest of the half, made later, is the same as made at once
  assert.deepEqual(halved(halved(lazily)).data, halved(halved(whole)).data);
  assert.deepEqual(halved(lazily).data, halved(whole).data);
});

test('paper and ink: the order statistics a sort gives, ties and all', () => {
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (const length of [1, 2, 3, 10, 101, 4096]) {
    for (const levels of [2, 17, 256]) {
      const grey = Float32Array.from({ length }, () => Math.floor(next() * levels) + (levels === 256 ? next() / 3 : 0));
      const sorted = Float32Array.from(grey).sort();
      for (const inkQuantile of [0, 0.01, 0.02, 0.5, 0.95]) {
        const expected = { paper: sorted[Math.floor(length * 0.9)], ink: sorted[Math.floor(length * inkQuantile)] };
        assert.deepEqual(paperAndInk(grey, inkQuantile), expected, `${length} values of ${levels} levels, ink at ${inkQuantile}`);
      }
    }
  }
  const grey = Float32Array.of(3, 1, 2);
  paperAndInk(grey, 0.01);
  assert.deepEqual([...grey], [3, 1, 2], 'the caller\u2019s values are left as they were');
});
