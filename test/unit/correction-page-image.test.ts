import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { it } from 'node:test';
import sharp from 'sharp';
import { pageImageOf } from '../../src/recognition/correction/page-image.ts';

// a 60 x 40 page, white with a black block in its top-left corner
async function page(): Promise<Buffer> {
  const block = await sharp({ create: { width: 20, height: 10, channels: 3, background: '#000' } })
    .png()
    .toBuffer();
  return sharp({ create: { width: 60, height: 40, channels: 3, background: '#fff' } })
    .composite([{ input: block, left: 0, top: 0 }])
    .png()
    .toBuffer();
}

async function topLeftIsDark(image: Buffer): Promise<boolean> {
  const { data } = await sharp(image).greyscale().raw().toBuffer({ resolveWithObject: true });
  return data[0] < 64;
}

it('sends the model a page read turned as it was read, upright', async () => {
  const upright = await page();
  assert.equal(await topLeftIsDark((await pageImageOf(upright, 0)).data), true);
  // scanned upside down (read at orientation 180) and sideways (turned clockwise by 90: read at 270)
  const upsideDown = await sharp(upright).rotate(180).png().toBuffer();
  assert.equal(await topLeftIsDark((await pageImageOf(upsideDown, 0)).data), false);
  assert.equal(await topLeftIsDark((await pageImageOf(upsideDown, 180)).data), true);
  const sideways = await pageImageOf(await sharp(upright).rotate(90).png().toBuffer(), 270);
  assert.deepEqual([sideways.width, sideways.height], [60, 40]);
  assert.equal(await topLeftIsDark(sideways.data), true);
  // EXIF orientation is applied first: a JPEG stored sideways with orientation 6 is upright as it is
  const exif = await sharp(upright).rotate(270).jpeg().withMetadata({ orientation: 6 }).toBuffer();
  assert.equal(await topLeftIsDark((await pageImageOf(exif, 0)).data), true);
});

it('sends a JPEG 2000 page, which no provider takes, as JPEG', async () => {
  const jp2 = await readFile(path.resolve(import.meta.dirname, '../fixtures/jpeg2000/copiste-lines.jp2'));
  const image = await pageImageOf(jp2, 0);
  assert.equal(image.mimeType, 'image/jpeg');
  assert.deepEqual([image.width, image.height], [1261, 192]);
  assert.equal((await sharp(image.data).metadata()).format, 'jpeg');
});
