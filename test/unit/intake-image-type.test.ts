import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { detectImageType, IMAGE_SNIFF_BYTES } from '../../src/intake/image-type.ts';

const images = path.resolve(import.meta.dirname, '../fixtures/zips/images');
const head = (name: string) => readFileSync(path.join(images, name)).subarray(0, IMAGE_SNIFF_BYTES);

test('real JPEG, PNG, TIFF and WebP files are recognised by content', () => {
  assert.deepEqual(detectImageType(head('line-1.jpg')), { kind: 'image', format: 'jpeg', extension: 'jpg' });
  assert.deepEqual(detectImageType(head('line-6.png')), { kind: 'image', format: 'png', extension: 'png' });
  assert.deepEqual(detectImageType(head('line-7.tif')), { kind: 'image', format: 'tiff', extension: 'tif' });
  assert.deepEqual(detectImageType(head('line-8.webp')), { kind: 'image', format: 'webp', extension: 'webp' });
});

test('real JPEG 2000 files, a JP2 file and a bare codestream, are recognised by content', () => {
  const jpeg2000 = path.resolve(import.meta.dirname, '../fixtures/jpeg2000');
  const first = (name: string) => readFileSync(path.join(jpeg2000, name)).subarray(0, IMAGE_SNIFF_BYTES);
  assert.deepEqual(detectImageType(first('copiste-lines.jp2')), { kind: 'image', format: 'jp2', extension: 'jp2' });
  assert.deepEqual(detectImageType(first('copiste-lines.j2k')), { kind: 'image', format: 'j2k', extension: 'j2k' });
});

test('big-endian TIFF and BigTIFF are TIFF', () => {
  assert.equal(detectImageType(Buffer.from('4d4d002a00000008', 'hex')).kind, 'image');
  assert.equal(detectImageType(Buffer.from('49492b0008000000', 'hex')).kind, 'image');
  assert.equal(detectImageType(Buffer.from('4d4d002b00080000', 'hex')).kind, 'image');
});

test('other image formats are recognised as unsupported', () => {
  assert.deepEqual(detectImageType(head('line-9.gif')), { kind: 'unsupported', format: 'gif' });
  const bmp = Buffer.alloc(32);
  bmp.write('BM', 0, 'latin1');
  bmp.writeUInt32LE(40, 14);
  assert.deepEqual(detectImageType(bmp), { kind: 'unsupported', format: 'bmp' });
  assert.deepEqual(detectImageType(Buffer.from('ff0afa7f', 'hex')), { kind: 'unsupported', format: 'jpeg-xl' });
  assert.deepEqual(detectImageType(Buffer.concat([Buffer.from('00000018', 'hex'), Buffer.from('ftypheic', 'latin1'), Buffer.alloc(8)])), {
    kind: 'unsupported',
    format: 'heif',
  });
  assert.deepEqual(detectImageType(Buffer.concat([Buffer.from('0000001c', 'hex'), Buffer.from('ftypavif', 'latin1'), Buffer.alloc(8)])), {
    kind: 'unsupported',
    format: 'avif',
  });
  assert.deepEqual(detectImageType(Buffer.from('%PDF-1.7\n%\xe2\xe3', 'latin1')), { kind: 'unsupported', format: 'pdf' });
});

test('names play no part, and non-images are unknown', () => {
  for (const bytes of [
    Buffer.from('Pages 1-3 of the diary\n'),
    Buffer.from('PK\u0003\u0004', 'latin1'),
    Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
    Buffer.from('BM only two letters'),
    Buffer.from('RIFF\u0000\u0000\u0000\u0000WAVEfmt ', 'latin1'),
    Buffer.from('ffd8', 'hex'),
    Buffer.alloc(0),
  ]) {
    assert.deepEqual(detectImageType(bytes), { kind: 'unknown' }, bytes.toString('latin1'));
  }
});
