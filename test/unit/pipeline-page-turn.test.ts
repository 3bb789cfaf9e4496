import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { turnedHalfWay } from '../../src/pipeline/image/raster.ts';
import { probeSpan, readsBetterTurned, writesAlong } from '../../src/pipeline/recognition/page-turn.ts';
import { regionsTurnedBack } from '../../src/pipeline/turned-page.ts';
import { syntheticPage } from '../support/synthetic-pages.ts';

describe('pages upside down', () => {
  it('turns a page when its probe lines read surer turned, by more than the margin', () => {
    assert.equal(readsBetterTurned([0.5, 0.6, 0.55], [0.8, 0.85, 0.9]), true);
    assert.equal(readsBetterTurned([0.9, 0.85], [0.6, 0.7]), false);
    // a tie, or a gain within the margin (0.03), keeps the page as it lies
    assert.equal(readsBetterTurned([0.7, 0.7], [0.72, 0.72]), false);
    assert.equal(readsBetterTurned([0.7, 0.7], [0.74, 0.74]), true);
    assert.equal(readsBetterTurned([], []), false);
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

  it('asks only a page whose writing runs mostly along it (by line width): a sideways page stays as it lies', () => {
    const along = { angle: 0.05 };
    const across = { angle: -Math.PI / 2 };
    assert.equal(writesAlong([along, across], [600, 400]), true);
    assert.equal(writesAlong([along, across, across], [300, 400, 400]), false);
    assert.equal(writesAlong([{ angle: Math.PI - 0.1 }], [500]), true, 'a line read right to left still runs along the page');
    assert.equal(writesAlong([], []), false);
  });

  it('turns a raster by 180°: the last pixel first, each pixel whole; twice gives it back', () => {
    // 3 x 2 pixels, each pixel's channels (10 p, 10 p + 1, 10 p + 2)
    const data = Uint8Array.from({ length: 18 }, (_, i) => 10 * Math.floor(i / 3) + (i % 3));
    const image = { data, width: 3, height: 2 };
    const turned = turnedHalfWay(image);
    assert.deepEqual([...turned.data.slice(0, 6)], [50, 51, 52, 40, 41, 42]);
    assert.deepEqual([...turned.data.slice(15)], [0, 1, 2]);
    assert.equal(turned.width, 3);
    assert.deepEqual([...turnedHalfWay(turned).data], [...data]);
  });

  it('brings regions, lines, baselines and words found on the turned page back into the image as sent', () => {
    const page = syntheticPage();
    const { width, height } = page.image;
    const back = regionsTurnedBack(page.regions, width, height);
    const [line] = back[0].lines;
    const [original] = page.regions[0].lines;
    assert.deepEqual(line.polygon[0], [width - original.polygon[0][0], height - original.polygon[0][1]]);
    assert.deepEqual(line.baseline.at(-1), [width - (original.baseline.at(-1)?.[0] ?? 0), height - (original.baseline.at(-1)?.[1] ?? 0)]);
    const word = original.words[0];
    assert.deepEqual(line.words[0].box, {
      x: width - word.box.x - word.box.width,
      y: height - word.box.y - word.box.height,
      width: word.box.width,
      height: word.box.height,
    });
    assert.equal(line.text, original.text);
    assert.deepEqual(regionsTurnedBack(back, width, height), page.regions);
  });
});
