// Layout and recognition with the real built-in models on real pages, against their
// ground truth: line counts, word boxes, reading order, and the printed control's CER.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/platform/config.ts';
import { allLines, type PageResult } from '../../src/recognition/page/page-result.ts';
import { boundingBox } from '../../src/recognition/page/geometry.ts';
import { OcrEngine } from '../../src/recognition/engine/ocr-engine.ts';
import { recognizePage } from '../../src/recognition/recognize-page.ts';
import { closeSharedEngines, sharedEngine } from '../../src/pipeline/shared-engine.ts';
import { errorRate, scorePage } from '../../bench/lib/text-metrics.ts';
import {
  groundTruthLines,
  MARGINAL_PAGE,
  matchLines,
  PRINTED_PAGE,
  readingOrderAgreement,
  type RecognitionFixture,
} from '../support/recognition-fixtures.ts';

const pages = new Map<RecognitionFixture, PageResult>();
/** The handwritten page laid out by the detector and line grouping (the default setup without its segmenter). */
let detectorLaidOut: PageResult;

before(async () => {
  const config = loadConfig({});
  const engine = await sharedEngine(config.recognition);
  for (const [index, fixture] of [PRINTED_PAGE, MARGINAL_PAGE].entries()) {
    const { page } = await recognizePage(engine, await readFile(fixture.imagePath), {
      name: fixture.name,
      pageNumber: index + 1,
      maxPixels: config.limits.maxImagePixels,
      recognize: true,
    });
    pages.set(fixture, page);
  }
  const detecting = await OcrEngine.load({ ...engine.spec, segmentation: null }, engine.settings);
  try {
    detectorLaidOut = (
      await recognizePage(detecting, await readFile(MARGINAL_PAGE.imagePath), {
        name: MARGINAL_PAGE.name,
        pageNumber: 2,
        maxPixels: config.limits.maxImagePixels,
        recognize: true,
      })
    ).page;
  } finally {
    await detecting.close();
  }
});

after(() => closeSharedEngines());

function recognised(fixture: RecognitionFixture): PageResult {
  const page = pages.get(fixture);
  assert.ok(page, `${fixture.name} was not recognised`);
  return page;
}

test('the printed control page is read with a CER under 2% (measured: 0.1-0.3%)', () => {
  const page = recognised(PRINTED_PAGE);
  const score = scorePage(
    allLines(page).map((line) => line.text),
    PRINTED_PAGE.groundTruth,
  );
  assert.ok(errorRate(score.characters) < 0.02, `CER ${errorRate(score.characters)}`);
  assert.ok(errorRate(score.words) < 0.05, `WER ${errorRate(score.words)}`);
});

// Bounded near what the default model measures, so that a regression of a few points fails here.
// The figures belong to models/default's handwriting recognizer (models/hwr-htr-v2, beam decoding
// with its language model): CER 23.52%, WER 54.0% (docs/accuracy.md, the same page; greedy decoding
// 27.3%). The margin (2.5 points of CER, 5 of WER) covers float differences between machines and
// onnxruntime thread counts, not a model change: a new default recognizer re-measures this page and
// moves both the figures and the bounds here.
test('the handwritten page is read with a CER under 26% and a WER under 59% (hwr-htr-v2: 23.5% and 54.0%; tesseract: 59% CER)', () => {
  const page = recognised(MARGINAL_PAGE);
  const score = scorePage(
    allLines(page).map((line) => line.text),
    MARGINAL_PAGE.groundTruth,
  );
  assert.ok(errorRate(score.characters) < 0.26, `CER ${errorRate(score.characters)}`);
  assert.ok(errorRate(score.words) < 0.59, `WER ${errorRate(score.words)}`);
});

// The handwritten page's lines come from the line segmenter: 25 of its 28 ground-truth lines are
// matched one for one, because the margin note and the page number come joined to the lines beside
// them (a continuous baseline in the segmenter's map) and one interlinear word is missed; the
// detector's layout matched 26 to 28 of them, with its own losses elsewhere (docs/accuracy.md).
test('line counts are near the ground truth and almost every ground-truth line is found', async () => {
  for (const [fixture, tolerance, share] of [
    [PRINTED_PAGE, 0.05, 0.9],
    [MARGINAL_PAGE, 0.25, 0.85],
  ] as const) {
    const page = recognised(fixture);
    const truth = await groundTruthLines(fixture);
    const lines = allLines(page).length;
    assert.ok(
      Math.abs(lines - truth.length) <= Math.ceil(tolerance * truth.length),
      `${fixture.name}: ${lines} lines, ground truth ${truth.length}`,
    );
    const found = new Set(matchLines(page, truth).filter((index) => index >= 0)).size;
    assert.ok(found >= share * truth.length, `${fixture.name}: ${found} of ${truth.length} ground-truth lines found`);
  }
});

test('reading order agrees with the ground truth, margin note and page number included', async () => {
  const printed = readingOrderAgreement(matchLines(recognised(PRINTED_PAGE), await groundTruthLines(PRINTED_PAGE)));
  assert.equal(printed, 1);
  // The margin note "NOTA 1930 et 1966" comes before the line it stands beside; the page
  // number "46" (top right) comes right after the first line, where the ground truth has it last.
  const marginal = readingOrderAgreement(matchLines(recognised(MARGINAL_PAGE), await groundTruthLines(MARGINAL_PAGE)));
  assert.ok(marginal >= 0.9, `agreement ${marginal}`);
  const texts = allLines(recognised(MARGINAL_PAGE)).map((line) => line.text);
  const nota = texts.findIndex((text) => /NOTA/.test(text));
  // "TEL EST POURTANT NOTRE BUT": our recognizer reads "TEL est Pour TANT", PP-OCRv4 "POURTANT".
  const telEst = texts.findIndex((text) => /POUR ?TANT/i.test(text));
  assert.ok(nota >= 0 && telEst >= 0 && nota <= telEst, `NOTA at ${nota}, POURTANT at ${telEst}`);
});

// On the segmenter's lines the note joins the line beside it (above); reading order and regions
// type it as a margin note wherever it comes as a line of its own, as from the detector.
test('the margin note is a region of its own, typed marginalia (detector layout)', () => {
  const regions = detectorLaidOut.regions;
  const note = regions.find((region) => region.lines.some((line) => /NOTA/.test(line.text)));
  assert.ok(note, 'no region holds the margin note');
  assert.equal(note.type, 'marginalia');
  assert.ok(regions.filter((region) => region.type === 'paragraph').length >= 1);
});

test('word boxes lie inside their lines and spell the line', () => {
  for (const fixture of [PRINTED_PAGE, MARGINAL_PAGE]) {
    const page = recognised(fixture);
    for (const line of allLines(page)) {
      const lineBox = boundingBox(line.polygon);
      assert.ok(line.words.length > 0, `${line.id} has no words`);
      assert.equal(line.words.map((word) => word.text).join(' '), line.text, line.id);
      for (const word of line.words) {
        const { x, y, width, height } = word.box;
        assert.ok(width > 0 && height > 0, `${word.id} has an empty box`);
        assert.ok(
          x >= lineBox.x && y >= lineBox.y && x + width <= lineBox.x + lineBox.width && y + height <= lineBox.y + lineBox.height,
          `${word.id} leaves ${line.id}`,
        );
        assert.ok(word.confidence > 0 && word.confidence <= 1);
      }
      // Words follow the writing direction.
      const starts = line.words.map((word) => word.box.x);
      assert.ok(
        starts.every((start, index) => index === 0 || start >= starts[index - 1] - 2),
        `${line.id}: words out of order`,
      );
    }
  }
});

test('lines carry geometry, baselines and confidences inside the page', () => {
  for (const fixture of [PRINTED_PAGE, MARGINAL_PAGE]) {
    const page = recognised(fixture);
    const inside = ([x, y]: readonly [number, number]) => x >= 0 && y >= 0 && x <= page.image.width && y <= page.image.height;
    for (const region of page.regions) {
      assert.ok(region.polygon.length >= 3 && region.polygon.every(inside));
      for (const line of region.lines) {
        assert.ok(line.polygon.length >= 4 && line.polygon.every(inside), line.id);
        assert.ok(line.baseline.length >= 2 && line.baseline.every(inside), line.id);
        const box = boundingBox(line.polygon);
        const xs = line.baseline.map(([x]) => x);
        assert.ok(
          xs.every((x, index) => index === 0 || x >= xs[index - 1]),
          `${line.id}: baseline does not run left to right`,
        );
        // The baseline lies in the lower part of the line, not on its top.
        const meanY = line.baseline.reduce((sum, [, y]) => sum + y, 0) / line.baseline.length;
        assert.ok(
          meanY > box.y + box.height * 0.4 && meanY <= box.y + box.height,
          `${line.id}: baseline at ${meanY} in ${JSON.stringify(box)}`,
        );
        assert.ok(line.confidence > 0 && line.confidence <= 1);
      }
    }
    assert.equal(page.image.width > 0 && page.image.height > 0, true);
    // The default setup has two recognizers (docs/recognition.md, "Two recognizers"); the built-in model one.
    // The models that laid the page out come first: one, or the detector and the segmenter whose lines it kept.
    const roles = page.producer.models.map((model) => model.role);
    const layoutModels = roles.findIndex((role) => role !== 'detection');
    assert.ok(layoutModels >= 1 && layoutModels <= 2, roles.join(', '));
    assert.ok(
      roles.slice(layoutModels).every((role) => role === 'recognition'),
      roles.join(', '),
    );
  }
});
