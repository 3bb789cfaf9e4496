// The shipped line segmenter (models/hwr-seg-v3) on a real handwritten fixture page that no
// training or tuning saw: its lines are found one for one against the page's ground truth, with
// baselines inside their outlines, also when the page is made bitonal as an archive's 1-bit scan;
// and the engine's layout uses it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CAPTURE_CONDITIONS } from '../../bench/lib/capture-conditions.ts';
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import type { RgbImage } from '../../src/recognition/image/raster.ts';
import { segmentLines, type SegmentedLine } from '../../src/recognition/layout/line-segmenter.ts';
import { parseUploadedLayout, type UploadedLine } from '../../src/recognition/layout/uploaded-layout.ts';
import { defaultModelSpec } from '../../src/recognition/models/default-model.ts';
import { createSession, type InferenceSession } from '../../src/recognition/models/onnx.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import type { Point } from '../../src/recognition/page/page-result.ts';
import { insidePolygon } from '../support/polygons.ts';

const PAGES = path.resolve(import.meta.dirname, '../fixtures/pages');
const spec = defaultModelSpec();
let session: InferenceSession;
let page: RgbImage;
let truth: UploadedLine[];

before(async () => {
  assert.ok(spec.segmentation, 'the default setup has a line segmenter');
  session = await createSession(spec.segmentation.file, 2);
  const prepared = await prepareImage(readFileSync(path.join(PAGES, 'peraire_test_B.12.japon3_0048.jpg')), {
    name: 'peraire',
    maxPixels: 100_000_000,
  });
  page = prepared.raster;
  truth = parseUploadedLayout(readFileSync(path.join(PAGES, 'peraire_test_B.12.japon3_0048.xml')), page).regions.flatMap(
    (region) => region.lines,
  );
});

after(() => session?.release());

/** Points along a baseline at 10 %, 30 %, 50 %, 70 % and 90 % of its x extent. */
function along(baseline: readonly Point[]): Point[] {
  const xs = baseline.map(([x]) => x);
  const [left, right] = [Math.min(...xs), Math.max(...xs)];
  return [0.1, 0.3, 0.5, 0.7, 0.9].map((share) => {
    const x = left + share * (right - left);
    const k = baseline.findIndex(([bx], i) => i > 0 && bx >= x);
    const [x0, y0] = baseline[Math.max(0, k - 1)];
    const [x1, y1] = baseline[Math.max(0, k)];
    return [x, x1 === x0 ? y0 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0)];
  });
}

/** A line holds most of another's baseline when at least 3 of its 5 points lie in its outline. */
function holds(line: Pick<SegmentedLine, 'polygon'>, baseline: readonly Point[]): boolean {
  return along(baseline).filter((point) => insidePolygon(point, line.polygon)).length >= 3;
}

/** The segmented lines against the ground truth's: found one for one, each a left-to-right baseline inside its outline. */
function assertOneForOne(lines: readonly SegmentedLine[], raster: RgbImage): void {
  const found = truth.filter((gt) => lines.some((line) => holds(line, gt.baseline)));
  const right = lines.filter((line) => truth.some((gt) => holds(gt, line.baseline)));
  assert.ok(found.length >= 0.9 * truth.length, `found ${found.length} of ${truth.length} ground-truth lines`);
  assert.ok(right.length >= 0.85 * lines.length, `${right.length} of ${lines.length} segmented lines lie on ground-truth lines`);
  assert.ok(lines.length <= truth.length * 1.2, `${lines.length} lines for ${truth.length}: lines cut into pieces`);
  for (const line of lines) {
    assert.ok(line.baseline.length >= 2 && line.polygon.length >= 3);
    assert.ok(holds(line, line.baseline), 'the baseline lies inside its own outline');
    for (const [x, y] of [...line.baseline, ...line.polygon]) assert.ok(x >= 0 && y >= 0 && x < raster.width && y < raster.height);
    const xs = line.baseline.map(([x]) => x);
    assert.deepEqual(
      xs,
      [...xs].sort((a, b) => a - b),
      'baselines run left to right',
    );
  }
}

test('on a real handwritten page the segmenter finds the ground-truth lines one for one', async () => {
  assertOneForOne(await segmentLines(session, spec.segmentation!, page), page);
});

test("made bitonal as an archive's conversion makes it (Sauvola, 1-bit TIFF), the page's lines are still found one for one", async () => {
  const bitonal = CAPTURE_CONDITIONS.find((condition) => condition.name === 'bitonal')!;
  const captured = await bitonal.capture(readFileSync(path.join(PAGES, 'peraire_test_B.12.japon3_0048.jpg')));
  const prepared = await prepareImage(captured.bytes, { name: 'peraire-bitonal', maxPixels: 100_000_000 });
  assert.deepEqual([prepared.raster.width, prepared.raster.height], [page.width, page.height]);
  assertOneForOne(await segmentLines(session, spec.segmentation!, prepared.raster), prepared.raster);
});

test('the default engine lays out the page from the segmenter: outlined lines with their baselines, in reading order', async () => {
  const engine = await OcrEngine.load(spec, { threads: 2, concurrency: 1 });
  try {
    const regions = await engine.layout(page);
    const lines = regions.flatMap((region) => region.lines);
    // 25 of 28 (v1 and v2 alike): the margin note and the page number join the lines beside them, one interlinear word is missed.
    assert.ok(lines.length >= 0.85 * truth.length, `${lines.length} lines for ${truth.length}`);
    for (const line of lines) {
      assert.equal(line.fragments.length, 1);
      assert.ok(line.baseline && line.baseline.length >= 2);
    }
    // Reading order: the main column's lines come top to bottom (a line may start a little higher
    // than the one before it only when both share a row).
    const rows = lines
      .filter((line) => line.box.x > page.width * 0.25)
      .map((line) => line.baseline!.reduce((sum, [, y]) => sum + y, 0) / line.baseline!.length);
    rows
      .slice(1)
      .forEach((y, i) => assert.ok(y > rows[i] - 40, `line ${i + 2} (y ${y.toFixed(0)}) before line ${i + 1} (y ${rows[i].toFixed(0)})`));
    assert.ok(engine.models.some((model) => model.role === 'detection' && model.name.includes('seg.onnx')));
  } finally {
    await engine.close();
  }
});
