// Image preparation on real encoded images (made with sharp): orientation, colour
// spaces, bit depths, alpha, limits, corrupt input and multi-page files.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import sharp from 'sharp';
import { PipelineError, type PipelineErrorCode } from '../../src/pipeline/errors.ts';
import { prepareImage } from '../../src/pipeline/image/prepare-image.ts';

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
    /120000 pixels \(400x300\); the limit is 100000 \(MAX_IMAGE_PIXELS\)/,
  );
  const strip = await solid(31_000, 16, { r: 255, g: 255, b: 255 }).png().toBuffer();
  await rejectsWith(prepareImage(strip, options), 'image_too_large', /no side may exceed 30000 pixels/);
  await rejectsWith(prepareImage(await solid(8, 8, { r: 255, g: 255, b: 255 }).png().toBuffer(), options), 'image_too_small');
});

test('corrupt, empty, truncated and non-raster inputs are unreadable, not crashes', async () => {
  await rejectsWith(prepareImage(Buffer.from('this is not an image'), options), 'image_unreadable', /scan\.img is not a readable image/);
  await rejectsWith(prepareImage(Buffer.alloc(0), options), 'image_unreadable', /is empty/);
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
