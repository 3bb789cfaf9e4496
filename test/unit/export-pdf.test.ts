import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { PDFDocument, PDFName } from 'pdf-lib';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import sharp from 'sharp';
import { loadPdfAssets } from '../../src/export/assets.ts';
import { prepareExportPage } from '../../src/export/export-page.ts';
import { orientationMatrix, preparePdfImage, type PdfImageData } from '../../src/export/pdf/page-image.ts';
import { SearchablePdfWriter, type SearchablePdfFormat } from '../../src/export/pdf/searchable-pdf.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { regionsTurnedBack } from '../../src/recognition/engine/turned-page.ts';
import { layoutOnlyPage, syntheticPage } from '../support/synthetic-pages.ts';

async function buildPdf(pages: Array<{ result: PageResult; image: Buffer }>, format: SearchablePdfFormat = 'pdfa-2b'): Promise<Buffer> {
  const sink = new PassThrough();
  const parts: Buffer[] = [];
  sink.on('data', (part: Buffer) => parts.push(part));
  const pdf = await SearchablePdfWriter.start(sink, {
    format,
    title: 'Test – Ärger & ſo',
    producer: 'hwr 0.1.0',
    created: new Date('2025-01-02T03:04:05Z'),
    documentKey: 'job-1',
    ...(await loadPdfAssets()),
  });
  for (const page of pages) await pdf.addPage(prepareExportPage(page.result), page.image);
  const outcome = await pdf.finish();
  sink.end();
  const bytes = Buffer.concat(parts);
  assert.equal(outcome.bytes, bytes.length);
  return bytes;
}

async function extractText(pdf: Buffer): Promise<string[]> {
  const loading = getDocument({ data: new Uint8Array(pdf), verbosity: 0 });
  const document = await loading.promise;
  const pages: string[] = [];
  for (let number = 1; number <= document.numPages; number++) {
    const content = await (await document.getPage(number)).getTextContent({ disableNormalization: true });
    pages.push(content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join(''));
  }
  await loading.destroy();
  return pages;
}

const collapse = (text: string) => text.replace(/\s+/gu, ' ').trim();

function solid(width: number, height: number, channels: 3 | 4 = 3) {
  const background = channels === 4 ? { r: 200, g: 180, b: 150, alpha: 0.5 } : { r: 200, g: 180, b: 150 };
  return sharp({ create: { width, height, channels, background } });
}

/** A noisy image (so that a lossy step would show) as raw RGB pixels. */
function noisyRaw(width: number, height: number): Buffer {
  const pixels = Buffer.alloc(width * height * 3);
  let seed = 7;
  for (let index = 0; index < pixels.length; index++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    pixels[index] = seed >> 16;
  }
  return pixels;
}

/** Rebuilds a PNG from embedded Flate+predictor data, to decode it independently with sharp. */
function pngFrom(image: PdfImageData): Buffer {
  const chunk = (type: string, body: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, 'latin1'), body])), 0);
    return Buffer.concat([head, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(image.width, 0);
  header.writeUInt32BE(image.height, 4);
  header[8] = image.bitsPerComponent;
  header[9] = image.colorSpace === 'DeviceGray' ? 0 : image.colorSpace === 'DeviceRGB' ? 2 : 3;
  const chunks = [chunk('IHDR', header)];
  if (typeof image.colorSpace === 'object') chunks.push(chunk('PLTE', image.colorSpace.indexed));
  chunks.push(chunk('IDAT', image.data), chunk('IEND', Buffer.alloc(0)));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ...chunks]);
}

describe('PDF page images', () => {
  it('embeds JPEG bytes as they are (gray and colour)', async () => {
    for (const channels of [1, 3] as const) {
      const jpeg = await solid(64, 48)
        .toColourspace(channels === 1 ? 'b-w' : 'srgb')
        .jpeg()
        .toBuffer();
      const image = await preparePdfImage(jpeg, 1);
      assert.equal(image.route, 'jpeg-as-is');
      assert.equal(image.filter, 'DCTDecode');
      assert.equal(image.colorSpace, channels === 1 ? 'DeviceGray' : 'DeviceRGB');
      assert.ok(image.data.equals(jpeg));
      assert.deepEqual([image.width, image.height], [64, 48]);
    }
  });

  it('converts a CMYK JPEG losslessly to RGB instead of embedding DeviceCMYK', async () => {
    const cmyk = await solid(32, 32).toColourspace('cmyk').jpeg().toBuffer();
    const image = await preparePdfImage(cmyk, 1);
    assert.equal(image.route, 'converted-png');
    assert.equal(image.colorSpace, 'DeviceRGB');
  });

  it('takes a PNG without alpha as it is, and palette PNGs as Indexed', async () => {
    const raw = noisyRaw(40, 30);
    const png = await sharp(raw, { raw: { width: 40, height: 30, channels: 3 } })
      .png()
      .toBuffer();
    const image = await preparePdfImage(png, 1);
    assert.equal(image.route, 'png-as-is');
    assert.deepEqual(image.predictor, { colors: 3, columns: 40, bitsPerComponent: 8 });
    const decoded = await sharp(pngFrom(image)).raw().toBuffer();
    assert.ok(decoded.equals(raw), 'pixels are unchanged');

    const palette = await sharp(raw, { raw: { width: 40, height: 30, channels: 3 } })
      .png({ palette: true, colours: 16 })
      .toBuffer();
    const indexed = await preparePdfImage(palette, 1);
    assert.equal(indexed.route, 'png-as-is');
    assert.ok(typeof indexed.colorSpace === 'object');
  });

  it('converts TIFF, WebP and PNG with transparency losslessly, keeping alpha as a soft mask', async () => {
    const raw = noisyRaw(40, 30);
    const source = () => sharp(raw, { raw: { width: 40, height: 30, channels: 3 } });
    for (const encoded of [await source().tiff({ compression: 'lzw' }).toBuffer(), await source().webp({ lossless: true }).toBuffer()]) {
      const image = await preparePdfImage(encoded, 1);
      assert.equal(image.route, 'converted-png');
      assert.equal(image.softMask, null);
      assert.ok((await sharp(pngFrom(image)).raw().toBuffer()).equals(raw), 'pixels are unchanged');
    }
    const rgba = await solid(20, 10, 4).png().toBuffer();
    const withAlpha = await preparePdfImage(rgba, 1);
    assert.equal(withAlpha.route, 'converted-png');
    assert.ok(withAlpha.softMask);
    assert.equal(withAlpha.softMask.colorSpace, 'DeviceGray');
  });

  it('converts a bitonal CCITT G4 TIFF, as archives store their scans, to grey without losing a pixel', async () => {
    const ink = Buffer.from(
      noisyRaw(48, 32)
        .filter((_, i) => i % 3 === 0)
        .map((value) => (value < 128 ? 0 : 255)),
    );
    const g4 = await sharp(ink, { raw: { width: 48, height: 32, channels: 1 } })
      .toColourspace('b-w')
      .tiff({ bitdepth: 1, compression: 'ccittfax4' })
      .toBuffer();
    const image = await preparePdfImage(g4, 1);
    assert.equal(image.route, 'converted-png');
    assert.equal(image.colorSpace, 'DeviceGray');
    assert.equal(image.softMask, null);
    const decoded = await sharp(pngFrom(image)).extractChannel(0).raw().toBuffer();
    assert.ok(decoded.equals(ink), 'every pixel is the black or white it was');
  });

  it('converts a JPEG 2000 page, as archives keep their masters, to grey without losing a pixel', async () => {
    const fixtures = path.resolve(import.meta.dirname, '../fixtures/jpeg2000');
    const image = await preparePdfImage(await readFile(path.join(fixtures, 'copiste-lines.jp2')), 1);
    assert.equal(image.route, 'converted-png');
    assert.deepEqual(
      [image.width, image.height, image.colorSpace, image.bitsPerComponent, image.softMask],
      [1261, 192, 'DeviceGray', 8, null],
    );
    const decoded = await sharp(pngFrom(image)).extractChannel(0).raw().toBuffer();
    const original = await sharp(path.join(fixtures, 'copiste-lines.png')).extractChannel(0).raw().toBuffer();
    assert.ok(decoded.equals(original), 'the lossless JP2 page is in the PDF pixel for pixel');
  });

  it('rejects what is not an image with image_unsupported', async () => {
    await assert.rejects(preparePdfImage(Buffer.from('not an image at all'), 4), { code: 'image_unsupported', pageNumber: 4 });
  });

  it('draws EXIF-oriented images upright: the orientation matrix maps the stored corners right', () => {
    const stored = { width: 400, height: 300 };
    // Orientation 1: the identity placement.
    assert.deepEqual(orientationMatrix(1, stored, 96, 72), [96, 0, 0, 72, 0, 0]);
    // Orientation 6 (turn 90° clockwise to view): the page is 300 x 400 px.
    const [a, b, c, d, e, f] = orientationMatrix(6, stored, 72, 96);
    const apply = (u: number, v: number) => [a * u + c * v + e, b * u + d * v + f].map((value) => Math.round(value * 1000) / 1000);
    assert.deepEqual(apply(0, 1), [72, 96], 'stored top-left is shown at the top right');
    assert.deepEqual(apply(1, 1), [72, 0], 'stored top-right is shown at the bottom right');
    assert.deepEqual(apply(0, 0), [0, 96], 'stored bottom-left is shown at the top left');
    const upsideDown = orientationMatrix(3, stored, 96, 72);
    assert.deepEqual(
      upsideDown.map((value) => Math.round(value * 1000) / 1000),
      [-96, 0, 0, -72, 96, 72],
    );
  });
});

describe('searchable PDF', () => {
  it('extracts exactly the recognised text, incl. ſ ä ß œ é, aͤ and characters the font lacks', async () => {
    const image = await solid(1200, 800).jpeg().toBuffer();
    const pdf = await buildPdf([{ result: syntheticPage(), image }]);
    const [text] = await extractText(pdf);
    assert.equal(collapse(text), 'Grüße & <Dank> "ſo" ä ß œ é Tom\'s café — naïve façade Zwoͤlftes Stuͤk ⟦gestrichen⟧');
  });

  it('draws the text of a page read turned along the writing in the image, over its words, in reading order', async () => {
    const upright = syntheticPage(); // 1200 x 800 at 300 dpi: 0.24 pt a pixel
    const { width, height } = upright.image;
    const uprightText = collapse(
      (await extractText(await buildPdf([{ result: upright, image: await solid(1200, 800).jpeg().toBuffer() }])))[0],
    );
    for (const turn of [180, 90] as const) {
      const image = turn === 180 ? upright.image : { ...upright.image, width: height, height: width };
      const turned = syntheticPage({ image, orientation: turn, regions: regionsTurnedBack(upright.regions, turn, width, height) });
      const pdf = await buildPdf([{ result: turned, image: await solid(image.width, image.height).jpeg().toBuffer() }]);
      assert.equal(collapse((await extractText(pdf))[0]), uprightText, `${turn}°`);
      const loading = getDocument({ data: new Uint8Array(pdf), verbosity: 0 });
      const content = await (await (await loading.promise).getPage(1)).getTextContent();
      const first = content.items.find((item) => 'str' in item && item.str.trim() !== '') as { transform: number[] };
      const box = turned.regions[0].lines[0].words[0].box;
      const [a, b, c, d, x, y] = first.transform;
      if (turn === 180) {
        // upside down: the first word starts at the right end of its box, drawn turned
        assert.ok(a < 0 && d < 0 && Math.abs(b) < 1e-9 && Math.abs(c) < 1e-9, `text matrix ${first.transform}`);
        assert.ok(Math.abs(x - (box.x + box.width) * 0.24) < 1, `x ${x} for box ${JSON.stringify(box)}`);
        assert.ok(y >= (height - box.y - box.height) * 0.24 - 1 && y <= (height - box.y) * 0.24 + 1, `y ${y}`);
      } else {
        // the image turned clockwise by 90 makes the page upright: its writing runs up the image, words start at the box's bottom
        assert.ok(Math.abs(a) < 1e-9 && b > 0 && c < 0 && Math.abs(d) < 1e-9, `text matrix ${first.transform}`);
        assert.ok(Math.abs(y - (image.height - box.y - box.height) * 0.24) < 1, `y ${y} for box ${JSON.stringify(box)}`);
        assert.ok(x >= box.x * 0.24 - 1 && x <= (box.x + box.width) * 0.24 + 1, `x ${x}`);
      }
      await loading.destroy();
    }
  });

  it('sizes pages from the resolution (300 dpi when none), and stays within PDF limits', async () => {
    const image = await solid(1200, 800).jpeg().toBuffer();
    const at = (dpi: number | null, width = 1200, height = 800) =>
      syntheticPage({ image: { ...syntheticPage().image, dpi, width, height }, regions: [] });
    const pdf = await buildPdf([
      { result: at(150), image },
      { result: at(null), image },
      { result: at(1, 1200, 800), image },
    ]);
    const document = await PDFDocument.load(pdf);
    const sizes = document.getPages().map((page) => page.getSize());
    assert.deepEqual(sizes[0], { width: 576, height: 384 });
    assert.deepEqual(sizes[1], { width: 288, height: 192 });
    assert.deepEqual(sizes[2], { width: 14400, height: 9600 });
  });

  it('gives an EXIF-rotated JPEG a page of its upright size and keeps its bytes', async () => {
    const stored = await solid(800, 1200).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const result = syntheticPage(); // 1200 x 800 upright, as recognition saw it
    const pdf = await buildPdf([{ result, image: stored }]);
    const document = await PDFDocument.load(pdf);
    assert.deepEqual(document.getPages()[0].getSize(), { width: 288, height: 192 });
    assert.ok(pdf.includes(stored.subarray(0, 2000)), 'the JPEG is embedded as it is');
  });

  it('writes a text-free page for layout-only results and an empty page', async () => {
    const image = await solid(1200, 800).jpeg().toBuffer();
    const pdf = await buildPdf([
      { result: layoutOnlyPage(), image },
      { result: syntheticPage({ regions: [] }), image },
    ]);
    assert.deepEqual((await extractText(pdf)).map(collapse), ['', '']);
  });

  it('is byte-identical for the same input; plain PDFs claim no PDF/A', async () => {
    const image = await solid(1200, 800).jpeg().toBuffer();
    const first = await buildPdf([{ result: syntheticPage(), image }]);
    const second = await buildPdf([{ result: syntheticPage(), image }]);
    assert.ok(first.equals(second));
    const plain = await buildPdf([{ result: syntheticPage(), image }], 'pdf');
    const document = await PDFDocument.load(plain);
    assert.equal(document.catalog.get(PDFName.of('OutputIntents')), undefined);
    assert.doesNotMatch(plain.toString('latin1'), /pdfaid/);
    assert.match(first.toString('latin1'), /<pdfaid:part>2<\/pdfaid:part>/);
    assert.equal(collapse((await extractText(plain))[0]), collapse((await extractText(first))[0]));
  });
});
