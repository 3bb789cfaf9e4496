// JPEG 2000 pages (test/fixtures/jpeg2000, made by OpenJPEG's opj_compress: make-jpeg2000.py):
// headers read without decoding, decoding to the exact samples of lossless files, the variants
// refused, and the page as the pipeline sees it (the PDF's copy: export-pdf.test.ts).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import sharp from 'sharp';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { decodeJpeg2000, Jpeg2000DecodeError } from '../../src/recognition/image/jpeg2000-decode.ts';
import {
  bufferReader,
  type ByteReader,
  isJpeg2000,
  Jpeg2000HeaderError,
  jpeg2000TooLarge,
  readJpeg2000Header,
  unsupportedJpeg2000,
} from '../../src/recognition/image/jpeg2000-header.ts';
import { imageMetadata, openImage } from '../../src/recognition/image/open-image.ts';
import { prepareImage } from '../../src/recognition/image/prepare-image.ts';
import { turnsDuring } from '../support/event-loop-turns.ts';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/jpeg2000');
const fixture = (name: string) => readFile(path.join(fixtures, name));
const header = async (name: string) => readJpeg2000Header(bufferReader(await fixture(name)));

/** make-jpeg2000.py's pattern: sample (x, y, c) = (x * 7 + y * 13 + c * 101) mod (maximum + 1). */
function pattern(width: number, height: number, channels: number, maximum: number): number[] {
  const samples: number[] = [];
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) for (let c = 0; c < channels; c += 1) samples.push((x * 7 + y * 13 + c * 101) % (maximum + 1));
  return samples;
}

/** The PNG's pixels, one grey byte each. */
async function greyPixels(bytes: Buffer): Promise<Buffer> {
  return sharp(bytes).extractChannel(0).raw().toBuffer();
}

test('the headers give size, samples, colour space and resolution without decoding', async () => {
  assert.deepEqual(await header('copiste-lines.jp2'), {
    container: 'jp2',
    width: 1261,
    height: 192,
    components: 1,
    bitsPerSample: 8,
    signed: false,
    subsampled: false,
    enumeratedColourSpace: 17,
    palette: false,
    density: null,
  });
  const codestream = await header('copiste-lines.j2k');
  assert.equal(codestream.container, 'j2k');
  assert.deepEqual([codestream.width, codestream.height, codestream.components], [1261, 192, 1]);
  const deep = await header('pattern-rgb16.jp2');
  assert.deepEqual([deep.components, deep.bitsPerSample, deep.enumeratedColourSpace], [3, 16, 16]);
  assert.equal((await header('pattern-grey4.jp2')).bitsPerSample, 4);
  // 11 811 pixels a metre in the capture resolution box.
  assert.ok(Math.abs(((await header('copiste-lines-300dpi.jp2')).density ?? 0) - 300) < 0.01);
  for (const name of ['copiste-lines.jp2', 'copiste-lines.j2k']) assert.ok(isJpeg2000(await fixture(name)));
  assert.ok(!isJpeg2000(await fixture('copiste-lines.png')));
});

test('damaged headers are errors, and the variants we cannot read say why', async () => {
  const jp2 = await fixture('copiste-lines.jp2');
  // Cut inside the jp2h box, and a codestream box cut before its SIZ segment ends.
  await assert.rejects(readJpeg2000Header(bufferReader(jp2.subarray(0, 40))), Jpeg2000HeaderError);
  const codestream = await fixture('copiste-lines.j2k');
  await assert.rejects(readJpeg2000Header(bufferReader(codestream.subarray(0, 30))), /cut short/);
  await assert.rejects(readJpeg2000Header(bufferReader(Buffer.from('not a JPEG 2000 file'))), /no JPEG 2000 signature/);
  // An empty image extent (Xsiz = XOsiz).
  const empty = Buffer.from(codestream);
  empty.writeUInt32BE(empty.readUInt32BE(8 + 8), 8);
  await assert.rejects(readJpeg2000Header(bufferReader(empty)), /extent is empty/);

  assert.equal(unsupportedJpeg2000(await header('copiste-lines.jp2')), null);
  assert.match(unsupportedJpeg2000(await header('sycc.jp2')) ?? '', /colour space is sYCC/);
  // The first component sampled every second column (XRsiz 2).
  const subsampled = Buffer.from(codestream);
  subsampled[4 + 38 + 1] = 2;
  assert.match(unsupportedJpeg2000(await readJpeg2000Header(bufferReader(subsampled))) ?? '', /subsampled/);
  // Alpha: the decoder reads 1 or 3 components and throws on others (a bare C++ exception).
  assert.match(
    unsupportedJpeg2000(await header('pattern-rgba.jp2')) ?? '',
    /it has 4 components \(colour and alpha\); the JPEG 2000 decoder reads grey/,
  );
  await assert.rejects(decodeJpeg2000(await fixture('pattern-rgba.jp2')), (error: Error) => {
    assert.ok(error instanceof Jpeg2000DecodeError);
    assert.equal(error.message, 'OpenJPEG failed (it stopped with an internal exception)');
    return true;
  });
});

test("a page too large for the decoder's 2 GiB is refused from its header: 120 Mpx RGB decodes at 8 bits, not at 16", async () => {
  const rgb16 = await header('pattern-rgb16.jp2');
  const big = { ...rgb16, width: 12_000, height: 10_000 };
  // Both measured (docs/intake.md): 1.8 GiB of the decoder's heap at 8 bits; at 16, it ran out.
  assert.equal(jpeg2000TooLarge({ ...big, bitsPerSample: 8 }, 8_000_000), null);
  assert.match(
    jpeg2000TooLarge(big, 8_000_000) ?? '',
    /^decoding 12000×10000 pixels at 16 bits needs about 2\.1 GiB, more than the 2\.0 GiB the JPEG 2000 decoder has; send it as TIFF or PNG, or at 8 bits$/,
  );
  // The codestream counts too: a lossless file of a large page.
  assert.equal(jpeg2000TooLarge({ ...big, width: 9_000, bitsPerSample: 8 }, 100_000_000), null);
  assert.notEqual(jpeg2000TooLarge({ ...big, width: 9_000, bitsPerSample: 8 }, 400_000_000), null);
  // The pipeline refuses such a page (stored before intake checked this) as too large, not unreadable.
  const file = Buffer.from(await fixture('pattern-rgb16.jp2'));
  const siz = file.indexOf(Buffer.from([0xff, 0x4f, 0xff, 0x51])) + 2;
  file.writeUInt32BE(12_000, siz + 6);
  file.writeUInt32BE(10_000, siz + 10);
  await assert.rejects(prepareImage(file, { name: 'master.jp2', maxPixels: 200_000_000 }), (error: PipelineError) => {
    assert.equal(error.code, 'image_too_large');
    assert.match(
      error.message,
      /^master\.jp2: a JPEG 2000 image too large to decode: decoding 12000×10000 pixels at 16 bits needs about 2\.1 GiB/,
    );
    return true;
  });
});

test('a file of many small boxes is refused after the box budget, counted over all levels (each box is a read at intake)', async () => {
  const box = (type: string, content: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(8 + content.length);
    head.write(type, 4, 'latin1');
    return Buffer.concat([head, content]);
  };
  const res = box('res ', Buffer.concat(Array.from({ length: 1000 }, () => box('free', Buffer.alloc(0)))));
  const jp2 = await fixture('copiste-lines.jp2');
  // The real file's signature and ftyp, then a jp2h of 20 000 empty boxes in 20 'res ' boxes (each under 10 000).
  const flood = Buffer.concat([jp2.subarray(0, 32), box('jp2h', Buffer.concat(Array.from({ length: 20 }, () => res)))]);
  let reads = 0;
  const counting: ByteReader = async (offset, length) => {
    reads += 1;
    return flood.subarray(offset, offset + length);
  };
  await assert.rejects(readJpeg2000Header(counting), /more than 10000 boxes/);
  assert.ok(reads <= 10_002, `${reads} reads`);
});

test('lossless files decode to their exact samples: 8-bit grey, 16-bit RGB, 4-bit grey stretched to 0..255, a palette applied', async () => {
  const lines = await decodeJpeg2000(await fixture('copiste-lines.jp2'));
  assert.deepEqual([lines.width, lines.height, lines.channels, lines.depth], [1261, 192, 1, 8]);
  assert.ok(
    Buffer.from(lines.data.buffer, lines.data.byteOffset, lines.data.byteLength).equals(
      await greyPixels(await fixture('copiste-lines.png')),
    ),
  );

  const deep = await decodeJpeg2000(await fixture('pattern-rgb16.jp2'));
  assert.deepEqual([deep.width, deep.height, deep.channels, deep.depth], [64, 48, 3, 16]);
  assert.ok(deep.data instanceof Uint16Array);
  assert.deepEqual(Array.from(deep.data), pattern(64, 48, 3, 65535));

  const shallow = await decodeJpeg2000(await fixture('pattern-grey4.jp2'));
  assert.deepEqual([shallow.channels, shallow.depth], [1, 8]);
  assert.deepEqual(
    Array.from(shallow.data),
    pattern(64, 48, 1, 15).map((value) => value * 17),
  );

  // A palette (pclr, cmap): the page's grey levels as indices into (v, 255 - v, 3v mod 256).
  const paletteFile = await fixture('palette.jp2');
  assert.deepEqual((await imageMetadata(paletteFile)).channels, 3);
  const coloured = await decodeJpeg2000(paletteFile);
  assert.deepEqual([coloured.width, coloured.height, coloured.channels, coloured.depth], [1261, 192, 3, 8]);
  const grey = await greyPixels(await fixture('copiste-lines.png'));
  assert.deepEqual(
    Array.from(coloured.data),
    Array.from(grey).flatMap((v) => [v, 255 - v, (v * 3) % 256]),
  );

  // A lossy bare codestream: the same page, close to the original.
  const lossy = await decodeJpeg2000(await fixture('copiste-lines.j2k'));
  const original = await greyPixels(await fixture('copiste-lines.png'));
  let difference = 0;
  for (let i = 0; i < original.length; i += 1) difference += Math.abs(lossy.data[i] - original[i]);
  assert.ok(difference / original.length < 4, `mean difference ${difference / original.length}`);
});

test('a damaged codestream is a decode error, not a crash or a blank page', async () => {
  const jp2 = await fixture('copiste-lines.jp2');
  await assert.rejects(decodeJpeg2000(jp2.subarray(0, 5000)), Jpeg2000DecodeError);
  await assert.rejects(decodeJpeg2000(Buffer.from('not a JPEG 2000 file at all')), Jpeg2000DecodeError);
});

test('decoding runs in a thread of its own: the event loop turns while a page decodes, and a decode past its time is stopped', async () => {
  const page = await fixture('copiste-lines.jp2');
  const { value: decoded, turns } = await turnsDuring(() => decodeJpeg2000(page));
  assert.equal(decoded.width, 1261);
  // On the main thread the decode held the loop: a turn or two around its awaits.
  assert.ok(turns > 20, `${turns} turns of the event loop while decoding`);
  await assert.rejects(decodeJpeg2000(await fixture('copiste-lines.jp2'), { timeoutMs: 1 }), /took longer than 1 ms and was stopped/);
  // A decode already under way when its task ends (a cancelled job) is stopped with the task's reason.
  const task = new AbortController();
  const underWay = decodeJpeg2000(await fixture('copiste-lines.jp2'), { signal: task.signal });
  await new Promise((resolve) => setTimeout(resolve, 30));
  task.abort(new Error('task handed back'));
  await assert.rejects(underWay, /task handed back/);
});

test('sharp reads a JPEG 2000 page through openImage: 16-bit samples stay 16-bit, the pixel limit holds before decoding', async () => {
  const metadata = await imageMetadata(await fixture('pattern-rgb16.jp2'));
  assert.deepEqual([metadata.format, metadata.width, metadata.height, metadata.channels, metadata.depth], ['jp2', 64, 48, 3, 'ushort']);
  const { data, info } = await (await openImage(await fixture('pattern-rgb16.jp2')))
    .toColourspace('rgb16')
    .raw({ depth: 'ushort' })
    .toBuffer({ resolveWithObject: true });
  assert.deepEqual([info.width, info.height, info.channels], [64, 48, 3]);
  assert.deepEqual(Array.from(new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2)), pattern(64, 48, 3, 65535));
  await assert.rejects(openImage(await fixture('copiste-lines.jp2'), { limitInputPixels: 1000 }), /exceeds pixel limit/);
  await assert.rejects(imageMetadata(await fixture('sycc.jp2')), /sYCC/);
  // A bare codestream is told apart from a JP2 file (the manifest's page format).
  assert.equal((await imageMetadata(await fixture('copiste-lines.j2k'))).format, 'j2k');
});

test('the pipeline prepares a lossless JP2 page exactly as the same page in PNG, with the JP2 resolution', async () => {
  const options = { name: 'page', maxPixels: 100_000_000 };
  const fromJp2 = await prepareImage(await fixture('copiste-lines-300dpi.jp2'), options);
  const fromPng = await prepareImage(await fixture('copiste-lines.png'), options);
  assert.deepEqual([fromJp2.source.format, fromJp2.source.width, fromJp2.source.height, fromJp2.source.dpi], ['jp2', 1261, 192, 300]);
  assert.ok(Buffer.from(fromJp2.raster.data).equals(Buffer.from(fromPng.raster.data)));
  await assert.rejects(prepareImage(await fixture('copiste-lines.jp2'), { ...options, maxPixels: 1000 }), (error) => {
    assert.ok(error instanceof PipelineError);
    assert.equal(error.code, 'image_too_large');
    return true;
  });
  await assert.rejects(prepareImage((await fixture('copiste-lines.jp2')).subarray(0, 5000), options), (error) => {
    assert.ok(error instanceof PipelineError);
    assert.equal(error.code, 'image_unreadable');
    return true;
  });
});
