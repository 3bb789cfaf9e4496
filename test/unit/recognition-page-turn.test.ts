import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { turnedBy } from '../../src/recognition/image/raster.ts';
import type { Point } from '../../src/recognition/page/page-result.ts';
import { likeliestTurn, probeSpan, quarterTurnsWorthTrying, writesAlong } from '../../src/recognition/reading/page-turn.ts';
import { regionsTurnedBack, turnMaps } from '../../src/recognition/engine/turned-page.ts';
import { syntheticPage } from '../support/synthetic-pages.ts';

describe('pages sideways or upside down', () => {
  it('keeps the page as it lies unless another side reads surer by more than the margin (0.03), its own sides before the quarter turns', () => {
    assert.equal(
      likeliestTurn([
        { turn: 0, confidence: 0.55 },
        { turn: 180, confidence: 0.85 },
      ]),
      180,
    );
    assert.equal(
      likeliestTurn([
        { turn: 0, confidence: 0.7 },
        { turn: 180, confidence: 0.72 },
      ]),
      0,
    );
    assert.equal(
      likeliestTurn([
        { turn: 0, confidence: 0.6 },
        { turn: 180, confidence: 0.5 },
        { turn: 90, confidence: 0.62 },
        { turn: 270, confidence: 0.9 },
      ]),
      270,
    );
    // a page whose own layout runs across it has no sides of its own: the best quarter turn wins
    assert.equal(
      likeliestTurn([
        { turn: 90, confidence: 0.4 },
        { turn: 270, confidence: 0.45 },
      ]),
      270,
    );
    // a quarter turn, read on other lines from a second layout, must beat the page's own best side by the margin too
    assert.equal(
      likeliestTurn([
        { turn: 0, confidence: 0.5 },
        { turn: 180, confidence: 0.7 },
        { turn: 90, confidence: 0.72 },
        { turn: 270, confidence: 0.4 },
      ]),
      180,
    );
    assert.equal(likeliestTurn([]), 0);
  });

  it('tries the quarter turns only when the page as it lies reads badly both ways, or runs across', () => {
    assert.equal(
      quarterTurnsWorthTrying([
        { turn: 0, confidence: 0.9 },
        { turn: 180, confidence: 0.5 },
      ]),
      false,
    );
    assert.equal(
      quarterTurnsWorthTrying([
        { turn: 0, confidence: 0.6 },
        { turn: 180, confidence: 0.5 },
      ]),
      true,
    );
    assert.equal(quarterTurnsWorthTrying([]), true);
  });

  it('counts the writing that runs along the page by line width', () => {
    const along = { angle: 0.05 };
    const across = { angle: -Math.PI / 2 };
    assert.equal(writesAlong([along, across], [600, 400]), true);
    assert.equal(writesAlong([along, across, across], [300, 400, 400]), false);
    assert.equal(writesAlong([{ angle: Math.PI - 0.1 }], [500]), true, 'a line read right to left still runs along the page');
    assert.equal(writesAlong([], []), false);
  });

  it('reads a probe line over at most 12 line heights around its centre', () => {
    assert.deepEqual(probeSpan({ cx: 500, cy: 40, width: 900, height: 30, angle: 0.1 }), {
      cx: 500,
      cy: 40,
      width: 360,
      height: 30,
      angle: 0.1,
    });
    assert.deepEqual(probeSpan({ cx: 500, cy: 40, width: 200, height: 30, angle: 0 }), {
      cx: 500,
      cy: 40,
      width: 200,
      height: 30,
      angle: 0,
    });
  });

  it('turns a raster clockwise as sharp does, by 90, 180 and 270°', async () => {
    // a raster smaller than one of turnedBy's tiles, and one of several tiles with partial ones at its edges
    for (const [width, height] of [
      [5, 3],
      [150, 70],
    ]) {
      const data = Uint8Array.from({ length: width * height * 3 }, (_, i) => (i * 37) % 251);
      for (const turn of [90, 180, 270] as const) {
        const { data: expected, info } = await sharp(data, { raw: { width, height, channels: 3 } })
          .rotate(turn)
          .raw()
          .toBuffer({ resolveWithObject: true });
        const turned = turnedBy({ data, width, height }, turn);
        assert.deepEqual([turned.width, turned.height], [info.width, info.height], `${width} x ${height}, ${turn}°`);
        assert.deepEqual(Buffer.from(turned.data), expected, `${width} x ${height}, ${turn}°`);
      }
    }
  });

  it('maps points of the page turned upright back into the image as sent, and the image onto the turned page', () => {
    // an image 1200 x 800; turned by 90 or 270° it is 800 x 1200
    const corner: Point = [10, 20];
    for (const [turn, width, height, inImage] of [
      [90, 800, 1200, [20, 790]],
      [180, 1200, 800, [1190, 780]],
      [270, 800, 1200, [1180, 10]],
    ] as const) {
      const { toImage, toUpright } = turnMaps(turn, width, height);
      assert.deepEqual(toImage(corner), inImage, `${turn}°`);
      assert.deepEqual(toUpright(toImage(corner)), corner, `${turn}°`);
    }
  });

  it('brings regions, lines, baselines and words found on the turned page back into the image as sent', () => {
    const page = syntheticPage();
    const { width, height } = page.image;
    const back = regionsTurnedBack(page.regions, 180, width, height);
    const [line] = back[0].lines;
    const [original] = page.regions[0].lines;
    assert.deepEqual(line.polygon[0], [width - original.polygon[0][0], height - original.polygon[0][1]]);
    const word = original.words[0];
    assert.deepEqual(line.words[0].box, {
      x: width - word.box.x - word.box.width,
      y: height - word.box.y - word.box.height,
      width: word.box.width,
      height: word.box.height,
    });
    assert.equal(line.text, original.text);
    assert.deepEqual(regionsTurnedBack(back, 180, width, height), page.regions);
    // a quarter turn swaps a word box's sides
    const sideways = regionsTurnedBack(page.regions, 90, width, height)[0].lines[0].words[0].box;
    assert.deepEqual(sideways, { x: word.box.y, y: width - word.box.x - word.box.width, width: word.box.height, height: word.box.width });
  });
});
