// A page of more pixels than the models need (MODEL_PAGE_PIXELS, ADR 0040) with the real default
// setup: the handwritten fixture page scanned at twice its resolution (6,690 x 8,730, 58 Mpx) is
// decoded reduced, read as the page is at its own size, and its page result, PageXML-bound
// coordinates and PDF/A stay in the pixels of the image as sent.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { PDFDocument, PDFName, PDFRawStream } from 'pdf-lib';
import sharp from 'sharp';
import { loadPdfAssets } from '../../src/export/assets.ts';
import { prepareExportPage } from '../../src/export/export-page.ts';
import { SearchablePdfWriter } from '../../src/export/pdf/searchable-pdf.ts';
import { closeSharedEngines, sharedEngine } from '../../src/pipeline/shared-engine.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { MODEL_PAGE_PIXELS, prepareImage } from '../../src/recognition/image/prepare-image.ts';
import { allLines } from '../../src/recognition/page/page-result.ts';
import { recognizePage, type PageRecognition } from '../../src/recognition/recognize-page.ts';
import { errorRate, scorePage } from '../../bench/lib/text-metrics.ts';
import { MARGINAL_PAGE } from '../support/recognition-fixtures.ts';

const config = loadConfig({});
const WIDTH = 3345 * 2;
const HEIGHT = 4365 * 2;
let large: Buffer;
let ordinary: PageRecognition;
let enlarged: PageRecognition;

before(async () => {
  const engine = await sharedEngine(config.recognition);
  const bytes = await readFile(MARGINAL_PAGE.imagePath);
  large = await sharp(bytes).resize(WIDTH, HEIGHT).jpeg({ quality: 90 }).withMetadata({ density: 800 }).toBuffer();
  const read = (image: Buffer, name: string) =>
    recognizePage(engine, image, { name, pageNumber: 1, maxPixels: config.limits.maxImagePixels, recognize: true });
  ordinary = await read(bytes, 'ordinary.jpg');
  enlarged = await read(large, 'large.jpg');
});

after(() => closeSharedEngines());

test('a page over MODEL_PAGE_PIXELS is decoded at about that many pixels, its source at the size sent', async () => {
  const prepared = await prepareImage(large, {
    name: 'large.jpg',
    maxPixels: config.limits.maxImagePixels,
    decodedPixels: MODEL_PAGE_PIXELS,
  });
  const pixels = prepared.raster.width * prepared.raster.height;
  assert.ok(
    pixels <= MODEL_PAGE_PIXELS * 1.001 && pixels >= MODEL_PAGE_PIXELS * 0.999,
    `${prepared.raster.width} x ${prepared.raster.height}`,
  );
  assert.deepEqual([prepared.source.width, prepared.source.height], [WIDTH, HEIGHT]);
  assert.ok(Math.abs(prepared.scale.x - prepared.scale.y) < 1e-3 && prepared.scale.x < 0.65, JSON.stringify(prepared.scale));
});

test('its page result is in the pixels of the image as sent: the same lines where the page at its own size has them, read as well', (t) => {
  assert.deepEqual([enlarged.page.image.width, enlarged.page.image.height], [WIDTH, HEIGHT]);
  assert.equal(enlarged.page.image.dpi, 800);
  const lines = allLines(enlarged.page);
  const own = allLines(ordinary.page);
  assert.ok(Math.abs(lines.length - own.length) <= 1, `${lines.length} lines against ${own.length}`);
  const centre = (points: readonly (readonly [number, number])[]) => [
    points.reduce((sum, [x]) => sum + x, 0) / points.length,
    points.reduce((sum, [, y]) => sum + y, 0) / points.length,
  ];
  // every line of the page at its own size, twice as far from the corner, has a line of the large page there
  // (measured: centres within 20 px down the page and 180 px along it, where a line's ends were found a little apart)
  for (const line of own) {
    const [x, y] = centre(line.polygon);
    const near = lines.some((other) => {
      const [ox, oy] = centre(other.polygon);
      return Math.abs(ox - 2 * x) < 250 && Math.abs(oy - 2 * y) < 30;
    });
    assert.ok(near, `no line of the large page at (${2 * x}, ${2 * y}): ${line.text}`);
  }
  for (const line of lines) {
    for (const [x, y] of [...line.polygon, ...line.baseline])
      assert.ok(x >= -1 && y >= -1 && x <= WIDTH + 1 && y <= HEIGHT + 1, `${x},${y}`);
    for (const word of line.words) assert.ok(word.box.x + word.box.width <= WIDTH + 1 && word.box.y + word.box.height <= HEIGHT + 1);
  }
  const cer = (recognition: PageRecognition) =>
    errorRate(
      scorePage(
        allLines(recognition.page).map((line) => line.text),
        MARGINAL_PAGE.groundTruth,
      ).characters,
    );
  t.diagnostic(
    `CER ${(100 * cer(ordinary)).toFixed(2)} % at its own size, ${(100 * cer(enlarged)).toFixed(2)} % enlarged and decoded reduced`,
  );
  assert.ok(cer(enlarged) < cer(ordinary) + 0.02, `CER ${cer(enlarged)} against ${cer(ordinary)}`);
});

test('the PDF/A of the large page embeds the image as sent, at its full resolution, under text at its coordinates', async () => {
  const sink = new PassThrough();
  const parts: Buffer[] = [];
  sink.on('data', (part: Buffer) => parts.push(part));
  const pdf = await SearchablePdfWriter.start(sink, {
    format: 'pdfa-2b',
    title: 'large page',
    producer: 'hwr test',
    created: new Date('2026-11-28T00:00:00Z'),
    documentKey: 'large',
    ...(await loadPdfAssets()),
  });
  const report = await pdf.addPage(prepareExportPage(enlarged.page), large);
  await pdf.finish();
  sink.end();
  assert.equal(report.sizeMismatch, null);
  assert.equal(report.dpi, 800);
  const document = await PDFDocument.load(Buffer.concat(parts));
  const page = document.getPage(0);
  const { width, height } = page.getSize();
  assert.ok(Math.abs(width - (WIDTH / 800) * 72) < 0.5 && Math.abs(height - (HEIGHT / 800) * 72) < 0.5, `${width} x ${height} pt`);
  const images = document.context
    .enumerateIndirectObjects()
    .map(([, object]) => object)
    .filter(
      (object): object is PDFRawStream => object instanceof PDFRawStream && object.dict.get(PDFName.of('Subtype')) === PDFName.of('Image'),
    );
  assert.equal(images.length, 1);
  assert.equal(String(images[0].dict.get(PDFName.of('Width'))), String(WIDTH));
  assert.equal(String(images[0].dict.get(PDFName.of('Height'))), String(HEIGHT));
  // the JPEG as sent, not a re-encoding of the reduced raster
  assert.ok(Buffer.from(images[0].contents).equals(large), 'the embedded image is the JPEG sent');
});
