// Real fixture ZIPs (test/fixtures/zips, see its README) through intakeScanZip into a real
// FilesystemBlobStore in a temporary directory.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import yazl from 'yazl';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { IntakeError, type IntakeErrorCode } from '../../src/intake/intake-error.ts';
import { intakeScanZip, maxZipEntries } from '../../src/intake/scan-zip.ts';

const zips = path.resolve(import.meta.dirname, '../fixtures/zips');
const images = path.join(zips, 'images');
const defaults = loadConfig({}).limits;

let root: string;
let blobs: FilesystemBlobStore;
let counter = 0;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-intake-'));
  blobs = new FilesystemBlobStore(path.join(root, 'blobs'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function run(fixture: string, limits: Partial<Config['limits']> = {}, extra: { signal?: AbortSignal } = {}) {
  const keyPrefix = `jobs/job-${(counter += 1)}/pages`;
  const zipPath = path.isAbsolute(fixture) ? fixture : path.join(zips, fixture);
  return {
    keyPrefix,
    result: intakeScanZip(zipPath, { limits: { ...defaults, ...limits }, blobs, keyPrefix, uploadName: path.basename(fixture), ...extra }),
  };
}

async function sha256(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

async function assertRefused(fixture: string, code: IntakeErrorCode, detail: RegExp, limits: Partial<Config['limits']> = {}) {
  const { keyPrefix, result } = run(fixture, limits);
  await assert.rejects(result, (error: unknown) => {
    assert.ok(error instanceof IntakeError, `expected an IntakeError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.equal(error.status, code === 'upload_too_large' ? 413 : 400);
    assert.match(error.detail, detail);
    return true;
  });
  // Nothing is left behind in the blob store.
  assert.equal(await blobs.stat(keyPrefix), null);
  await assert.rejects(readdir(blobs.localPath(keyPrefix)), { code: 'ENOENT' });
}

test('four formats, recognised by content, in natural order, OS junk ignored', async () => {
  const { keyPrefix, result } = run('valid-mixed.zip');
  const pages = await result;
  assert.deepEqual(
    pages.map(({ pageNumber, name, blobKey, bytes }) => ({ pageNumber, name, blobKey, bytes })),
    [
      { pageNumber: 1, name: 'scans/1.jpg', blobKey: `${keyPrefix}/0001.jpg`, bytes: (await stat(path.join(images, 'line-1.jpg'))).size },
      { pageNumber: 2, name: 'scans/2.png', blobKey: `${keyPrefix}/0002.png`, bytes: (await stat(path.join(images, 'line-6.png'))).size },
      {
        pageNumber: 3,
        name: 'scans/3.webp',
        blobKey: `${keyPrefix}/0003.webp`,
        bytes: (await stat(path.join(images, 'line-8.webp'))).size,
      },
      { pageNumber: 4, name: 'scans/10.tif', blobKey: `${keyPrefix}/0004.tif`, bytes: (await stat(path.join(images, 'line-7.tif'))).size },
    ],
  );
  const sources = ['line-1.jpg', 'line-6.png', 'line-8.webp', 'line-7.tif'];
  for (const [index, page] of pages.entries()) {
    const expected = await sha256(path.join(images, sources[index]));
    assert.equal(page.sha256, expected, page.name);
    assert.equal(await sha256(blobs.localPath(page.blobKey)), expected, page.name);
  }
  // Only the pages were stored (no junk, no temp files).
  assert.deepEqual((await readdir(blobs.localPath(keyPrefix))).sort(), ['0001.jpg', '0002.png', '0003.webp', '0004.tif']);
});

test('page order is the natural order of the paths, folders included', async () => {
  const pages = await run('natural-order.zip').result;
  assert.deepEqual(
    pages.map((page) => page.name),
    ['part 1/a.jpg', 'part 1/b.jpg', 'part 2/9.jpg', 'part 2/10.jpg', 'part 10/1.jpg'],
  );
  const sources = ['line-1.jpg', 'line-2.jpg', 'line-3.jpg', 'line-4.jpg', 'line-5.jpg'];
  for (const [index, page] of pages.entries()) {
    assert.equal(page.pageNumber, index + 1);
    assert.equal(await sha256(blobs.localPath(page.blobKey)), await sha256(path.join(images, sources[index])), page.name);
  }
});

test('content decides the format, not the name', async () => {
  const pages = await run('content-not-name.zip').result;
  assert.deepEqual(
    pages.map((page) => [page.name, page.blobKey.split('/').pop()]),
    [
      ['page1.jpg', '0001.png'],
      ['page2.png', '0002.jpg'],
    ],
  );
});

test('streamed ZIPs (data descriptors, made by Info-ZIP zip to a pipe) and Zip64 records are read', async () => {
  for (const fixture of ['streamed.zip', 'valid-zip64.zip']) {
    const pages = await run(fixture).result;
    assert.deepEqual(
      pages.map((page) => page.name),
      ['1.jpg', '2.jpg'],
      fixture,
    );
    assert.equal(pages[1].sha256, await sha256(path.join(images, 'line-2.jpg')), fixture);
  }
});

test('not a ZIP, a truncated ZIP and a damaged entry are invalid_zip', async () => {
  await assertRefused('not-a-zip.zip', 'invalid_zip', /"not-a-zip\.zip" is not a ZIP archive/);
  await assertRefused('truncated.zip', 'invalid_zip', /"truncated\.zip" is not a ZIP archive/);
  await assertRefused('crc-mismatch.zip', 'invalid_zip', /entry "1\.jpg" is damaged \(CRC-32 mismatch\)/);
});

test('an encrypted entry (zip -e) is encrypted_zip', async () => {
  await assertRefused('encrypted.zip', 'encrypted_zip', /entry "1\.jpg" is encrypted/);
});

test('absolute, climbing, backslash and drive-letter paths, and symbolic links, are unsafe_path', async () => {
  await assertRefused('traversal-dotdot.zip', 'unsafe_path', /entry "scans\/\.\.\/\.\.\/evil\.jpg" climbs out/);
  await assertRefused('traversal-absolute.zip', 'unsafe_path', /entry "\/tmp\/evil\.jpg" is an absolute path/);
  await assertRefused('traversal-backslash.zip', 'unsafe_path', /entry "\.\.\\\.\.\\evil\.jpg" climbs out/);
  await assertRefused('traversal-drive.zip', 'unsafe_path', /entry "C:\\Windows\\evil\.jpg" is an absolute path \(drive letter\)/);
  await assertRefused('symlink.zip', 'unsafe_path', /entry "link\.jpg" is a symbolic link/);
});

test('ZIP bombs: an absurd ratio, a header that lies about the size, and the size limits', async () => {
  await assertRefused('bomb-ratio.zip', 'zip_bomb', /entry "blank\.tif" declares 16777216 bytes from \d+ compressed, a ratio above 100/);
  // Headers say ~1 KiB; the data inflates to 16 MiB: caught while streaming.
  await assertRefused('bomb-lying-size.zip', 'zip_bomb', /entry "page\.jpg" inflates to more bytes than its header declares/);
  // Per-entry declared size limit.
  await assertRefused('valid-mixed.zip', 'zip_bomb', /entry "scans\/10\.tif" declares more than 10000 bytes/, {
    maxUncompressedBytes: 10_000,
  });
  // Total declared size limit (every entry is under it alone).
  await assertRefused('natural-order.zip', 'zip_bomb', /declares more than 5000 bytes uncompressed in total/, {
    maxUncompressedBytes: 5000,
  });
  // A stricter ratio still leaves small entries alone (grace below 1 MiB)...
  assert.equal((await run('valid-mixed.zip', { maxCompressionRatio: 1 }).result).length, 4);
});

test('ZIP bombs: many small entries, each under the per-entry grace, refused for the ratio of the archive as a whole', async () => {
  const zipPath = path.join(root, 'small-entry-bomb.zip');
  const zip = new yazl.ZipFile();
  const blankPage = Buffer.alloc(1024 * 1024); // 1 MiB: exactly at the per-entry grace
  for (let n = 1; n <= 100; n++) zip.addBuffer(blankPage, `${String(n).padStart(3, '0')}.tif`, { compress: true });
  zip.end();
  await new Promise<void>((resolve, reject) =>
    zip.outputStream
      .pipe(createWriteStream(zipPath))
      .on('close', () => resolve())
      .on('error', reject),
  );
  const { size } = await stat(zipPath);
  assert.ok(size < 200 * 1024, `the bomb is small (${size} bytes)`);
  await assertRefused(zipPath, 'zip_bomb', /"small-entry-bomb\.zip" declares \d+ bytes or more from a \d+-byte archive, a ratio above 100/);
});

test('no images at all is no_images (junk only, or an empty ZIP)', async () => {
  await assertRefused('junk-only.zip', 'no_images', /"junk-only\.zip" contains no images/);
  await assertRefused('empty.zip', 'no_images', /"empty\.zip" contains no images/);
});

test('a file that is not an image is refused by name, and pages already stored are removed', async () => {
  await assertRefused('not-an-image.zip', 'not_an_image', /entry "notes\.txt" is not an image/);
  await assertRefused('empty-entry.zip', 'not_an_image', /entry "1\.jpg" is empty/);
});

test('a recognised but unsupported image format is unsupported_image_format', async () => {
  await assertRefused('gif.zip', 'unsupported_image_format', /entry "2\.gif" is a GIF file/);
});

test('JPEG 2000 pages, a JP2 file and a bare codestream, are stored as they came and measured from their headers', async () => {
  const jpeg2000 = path.resolve(import.meta.dirname, '../fixtures/jpeg2000');
  const zipPath = path.join(root, 'jpeg2000.zip');
  await writeZip(zipPath, [
    ['master/0002.j2k', await readFile(path.join(jpeg2000, 'copiste-lines.j2k'))],
    ['master/0001.jp2', await readFile(path.join(jpeg2000, 'copiste-lines-300dpi.jp2'))],
  ]);
  const { keyPrefix, result } = run(zipPath);
  const pages = await result;
  assert.deepEqual(
    pages.map(({ pageNumber, name, blobKey }) => ({ pageNumber, name, blobKey })),
    [
      { pageNumber: 1, name: 'master/0001.jp2', blobKey: `${keyPrefix}/0001.jp2` },
      { pageNumber: 2, name: 'master/0002.j2k', blobKey: `${keyPrefix}/0002.j2k` },
    ],
  );
  assert.equal(pages[0].sha256, await sha256(path.join(jpeg2000, 'copiste-lines-300dpi.jp2')));
  // The pixel limit is checked from the header, as for the other formats.
  await assertRefused(zipPath, 'image_too_large', /entry "master\/0001\.jp2" is 1261×192 pixels, more than 200000/, {
    maxImagePixels: 200_000,
  });
});

test('a JPEG 2000 variant we cannot read, one too large for the decoder, or a cut JP2 header, is refused at intake', async () => {
  const jpeg2000 = path.resolve(import.meta.dirname, '../fixtures/jpeg2000');
  const sycc = path.join(root, 'sycc.zip');
  await writeZip(sycc, [['1.jp2', await readFile(path.join(jpeg2000, 'sycc.jp2'))]]);
  await assertRefused(sycc, 'unsupported_image_format', /entry "1\.jp2" is a JPEG 2000 image we cannot read: its colour space is sYCC/);
  const rgba = path.join(root, 'rgba.zip');
  await writeZip(rgba, [['1.jp2', await readFile(path.join(jpeg2000, 'pattern-rgba.jp2'))]]);
  await assertRefused(
    rgba,
    'unsupported_image_format',
    /entry "1\.jp2" is a JPEG 2000 image we cannot read: it has 4 components \(colour and alpha\)/,
  );
  // A page too large for the decoder's memory (its SIZ segment says 12000×10000, 16-bit RGB).
  const large = Buffer.from(await readFile(path.join(jpeg2000, 'pattern-rgb16.jp2')));
  const siz = large.indexOf(Buffer.from([0xff, 0x4f, 0xff, 0x51])) + 2;
  large.writeUInt32BE(12_000, siz + 6);
  large.writeUInt32BE(10_000, siz + 10);
  const tooLarge = path.join(root, 'large-jp2.zip');
  await writeZip(tooLarge, [['1.jp2', large]]);
  await assertRefused(
    tooLarge,
    'image_too_large',
    /entry "1\.jp2" is a JPEG 2000 image too large to decode: decoding 12000×10000 pixels at 16 bits needs about 2\.1 GiB/,
  );
  const cut = path.join(root, 'cut-jp2.zip');
  await writeZip(cut, [['1.jp2', (await readFile(path.join(jpeg2000, 'copiste-lines.jp2'))).subarray(0, 60)]]);
  await assertRefused(cut, 'unreadable_image', /entry "1\.jp2" looks like JP2 but its header cannot be read/);
});

test('an image whose header cannot be read is unreadable_image', async () => {
  await assertRefused('truncated-image.zip', 'unreadable_image', /entry "2\.jpg" looks like JPEG but its header cannot be read/);
});

test('a multi-page TIFF is multi_page_image', async () => {
  await assertRefused('multi-page-tiff.zip', 'multi_page_image', /entry "scan\.tif" holds 2 pages/);
});

test('an image over MAX_IMAGE_PIXELS is image_too_large', async () => {
  await assertRefused('valid-mixed.zip', 'image_too_large', /entry "scans\/1\.jpg" is 320×44 pixels, more than 10000/, {
    maxImagePixels: 10_000,
  });
  assert.equal((await run('valid-mixed.zip', { maxImagePixels: 320 * 44 }).result).length, 4);
});

test('more pages than MAX_PAGES is too_many_pages; exactly MAX_PAGES is accepted', async () => {
  await assertRefused('natural-order.zip', 'too_many_pages', /has 5 files; at most 4 pages/, { maxPages: 4 });
  assert.equal((await run('natural-order.zip', { maxPages: 5 }).result).length, 5);
});

test('an upload over MAX_UPLOAD_BYTES is upload_too_large (413)', async () => {
  const size = (await stat(path.join(zips, 'valid-mixed.zip'))).size;
  await assertRefused('valid-mixed.zip', 'upload_too_large', new RegExp(`larger than the ${size - 1}-byte limit`), {
    maxUploadBytes: size - 1,
  });
  assert.equal((await run('valid-mixed.zip', { maxUploadBytes: size }).result).length, 4);
});

test('unsupported compression and duplicate paths are refused', async () => {
  await assertRefused('bzip2.zip', 'unsupported_compression', /entry "1\.jpg" uses compression method 12/);
  await assertRefused('duplicate.zip', 'duplicate_entry', /entry "1\.jpg" appears more than once/);
});

test('an archive with a huge number of entries is refused before any is read', async () => {
  const zipPath = path.join(root, 'many-entries.zip');
  const count = maxZipEntries(1) + 1;
  await writeZip(
    zipPath,
    Array.from({ length: count }, (_, index) => [`__MACOSX/._${index}.jpg`, Buffer.alloc(0)] as [string, Buffer]),
  );
  await assertRefused(zipPath, 'too_many_entries', new RegExp(`has ${count} entries; at most ${count - 1}`), { maxPages: 1 });
});

test('an intake aborted midway (job cancelled, shutdown) stops and removes what it stored', async () => {
  const controller = new AbortController();
  // The real store, aborting the intake once the first page is in.
  class AbortAfterFirstPut extends FilesystemBlobStore {
    override async put(...args: Parameters<FilesystemBlobStore['put']>) {
      const info = await super.put(...args);
      controller.abort(new Error('job cancelled'));
      return info;
    }
  }
  const store = new AbortAfterFirstPut(path.join(root, 'blobs'));
  const keyPrefix = 'jobs/aborted/pages';
  await assert.rejects(
    intakeScanZip(path.join(zips, 'valid-mixed.zip'), { limits: defaults, blobs: store, keyPrefix, signal: controller.signal }),
    /job cancelled/,
  );
  await assert.rejects(readdir(store.localPath(keyPrefix)), { code: 'ENOENT' });

  const already = AbortSignal.abort(new Error('shutting down'));
  await assert.rejects(
    intakeScanZip(path.join(zips, 'valid-mixed.zip'), { limits: defaults, blobs, keyPrefix, signal: already }),
    /shutting down/,
  );
});

function writeZip(zipPath: string, entries: Array<[string, Buffer]>): Promise<void> {
  return new Promise((resolve, reject) => {
    const zip = new yazl.ZipFile();
    for (const [name, data] of entries) zip.addBuffer(data, name);
    zip.end();
    zip.outputStream.pipe(createWriteStream(zipPath)).on('close', resolve).on('error', reject);
  });
}
