// bench:capture's page conditions (bench/lib/capture-conditions.ts): each says truly where a point
// of the page lands, so that the ground truth's outlines are carried into the captured image.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import sharp from 'sharp';
import { CAPTURE_CONDITIONS, sauvola } from '../../bench/lib/capture-conditions.ts';

const WIDTH = 400;
const HEIGHT = 300;
// a black square near a corner, where a turn the wrong way would move it off its mapped place
const SQUARE = { left: 350, top: 250, size: 24 };

async function pageWithSquare(): Promise<Buffer> {
  const square = await sharp({ create: { width: SQUARE.size, height: SQUARE.size, channels: 3, background: { r: 0, g: 0, b: 0 } } })
    .png()
    .toBuffer();
  return sharp({ create: { width: WIDTH, height: HEIGHT, channels: 3, background: { r: 250, g: 250, b: 250 } } })
    .composite([{ input: square, left: SQUARE.left, top: SQUARE.top }])
    .jpeg({ quality: 95 })
    .toBuffer();
}

test('every condition maps the page into its image: the square lands where the map says, the paper stays light', async () => {
  const page = await pageWithSquare();
  for (const condition of CAPTURE_CONDITIONS) {
    const captured = await condition.capture(page);
    const { data, info } = await sharp(captured.bytes).greyscale().raw().toBuffer({ resolveWithObject: true });
    assert.deepEqual([info.width, info.height], [captured.width, captured.height], condition.name);
    const grey = ([x, y]: readonly [number, number]) => data[Math.round(y) * info.width + Math.round(x)];
    const centre = SQUARE.left + SQUARE.size / 2;
    const middle = SQUARE.top + SQUARE.size / 2;
    assert.ok(grey(captured.map([centre, middle])) < 90, `${condition.name}: ink at the square's mapped centre`);
    for (const corner of [-1, 1]) {
      // just outside the square on either side, along the writing
      const beside = captured.map([centre + corner * (SQUARE.size / 2 + 6), middle]);
      assert.ok(grey(beside) > 100, `${condition.name}: paper beside the square (${grey(beside)})`);
    }
    assert.ok(grey(captured.map([40, 40])) > 100, `${condition.name}: paper in the far corner`);
  }
});

test('bitonal pages are 1-bit CCITT G4 TIFFs of black and white only', async () => {
  const bitonal = CAPTURE_CONDITIONS.find((condition) => condition.name === 'bitonal')!;
  const captured = await bitonal.capture(await pageWithSquare());
  const metadata = await sharp(captured.bytes).metadata();
  assert.equal(metadata.format, 'tiff');
  assert.equal(metadata.bitsPerSample, 1);
  const values = new Set(await sharp(captured.bytes).greyscale().raw().toBuffer());
  assert.deepEqual(
    [...values].sort((a, b) => a - b),
    [0, 255],
  );
});

test("Sauvola's threshold keeps a pale stroke on paper that darkens across the page, where one level cannot", () => {
  const width = 200;
  const height = 40;
  const grey = new Uint8Array(width * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const paper = 235 - x * 0.6; // 235 on the left, 115 on the right
      const stroke = y >= 18 && y < 22; // a horizontal stroke 60 levels darker than its paper
      grey[y * width + x] = Math.round(stroke ? paper - 60 : paper);
    }
  const binary = sauvola(grey, width, height, 15);
  const inkShare = (rows: number[]) =>
    rows.reduce((sum, y) => sum + binary.subarray(y * width, (y + 1) * width).filter((value) => value === 0).length, 0) /
    (rows.length * width);
  assert.ok(inkShare([18, 19, 20, 21]) > 0.95, 'the stroke is ink along the whole page');
  assert.equal(inkShare([0, 1, 2, 37, 38, 39]), 0, 'the paper is paper, light or dark');
  // one global level between the stroke's darkest and the paper's lightest misses one or the other
  const strokeLeft = grey[20 * width];
  const paperRight = grey[2 * width + width - 1];
  assert.ok(paperRight < strokeLeft, 'the right paper is darker than the left stroke');
});
