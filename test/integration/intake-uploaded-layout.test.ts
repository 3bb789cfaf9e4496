// Bring your own layout at intake: a PageXML/ALTO file next to its image in the scan ZIP is
// stored as that page's layout after being checked against the image; each unusable file is
// refused with its own code, naming the entry, and nothing is left in the blob store.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import yazl from 'yazl';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { IntakeError, type IntakeErrorCode } from '../../src/intake/intake-error.ts';
import { intakeScanZip } from '../../src/intake/scan-zip.ts';
import { MAX_LAYOUT_BYTES } from '../../src/recognition/layout/uploaded-layout.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/export');
const defaults = loadConfig({}).limits;
let root: string;
let blobs: FilesystemBlobStore;
let counter = 0;
let zolaImage: Buffer;
let zolaXml: Buffer;
let kantXml: Buffer;
let draculaImage: Buffer;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-intake-layout-'));
  blobs = new FilesystemBlobStore(path.join(root, 'blobs'));
  [zolaImage, zolaXml, kantXml, draculaImage] = await Promise.all(
    ['cremma19_zola_f207.jpg', 'cremma19_zola_f207.xml', 'ocrd_kant_aufklaerung_1784_0017.xml', 'fondue_en_print_dracula_page_51.png'].map(
      (file) => readFile(path.join(FIXTURES, file)),
    ),
  );
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function zipFile(entries: [string, Buffer | string][]): Promise<string> {
  const zip = new yazl.ZipFile();
  for (const [name, body] of entries) zip.addBuffer(Buffer.from(body), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  const file = path.join(root, `upload-${(counter += 1)}.zip`);
  await writeFile(file, Buffer.concat(chunks));
  return file;
}

function intake(file: string, limits: Partial<Config['limits']> = {}) {
  const keyPrefix = `jobs/job-${(counter += 1)}/pages`;
  return { keyPrefix, result: intakeScanZip(file, { limits: { ...defaults, ...limits }, blobs, keyPrefix, uploadName: 'scans.zip' }) };
}

async function assertRefused(
  entries: [string, Buffer | string][],
  code: IntakeErrorCode,
  detail: RegExp,
  limits: Partial<Config['limits']> = {},
) {
  const { keyPrefix, result } = intake(await zipFile(entries), limits);
  await assert.rejects(result, (error: unknown) => {
    assert.ok(error instanceof IntakeError, `expected an IntakeError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.equal(error.status, 400);
    assert.match(error.detail, detail);
    return true;
  });
  await assert.rejects(readdir(blobs.localPath(keyPrefix)), { code: 'ENOENT' });
}

test("an XML file with an image's stem is that page's layout: stored beside it, not a page", async () => {
  const file = await zipFile([
    ['scans/1_zola.jpg', zolaImage],
    ['scans/1_zola.XML', zolaXml],
    ['scans/2_dracula.png', draculaImage],
  ]);
  // Two pages allowed: the XML does not count as one.
  const { keyPrefix, result } = intake(file, { maxPages: 2 });
  const pages = await result;
  assert.deepEqual(
    pages.map(({ pageNumber, name, blobKey, layoutBlobKey }) => ({ pageNumber, name, blobKey, layoutBlobKey })),
    [
      { pageNumber: 1, name: 'scans/1_zola.jpg', blobKey: `${keyPrefix}/0001.jpg`, layoutBlobKey: `${keyPrefix}/0001.layout.xml` },
      { pageNumber: 2, name: 'scans/2_dracula.png', blobKey: `${keyPrefix}/0002.png`, layoutBlobKey: undefined },
    ],
  );
  assert.deepEqual(await readFile(blobs.localPath(`${keyPrefix}/0001.layout.xml`)), zolaXml);
  assert.deepEqual((await readdir(blobs.localPath(keyPrefix))).sort(), ['0001.jpg', '0001.layout.xml', '0002.png']);
});

test("refused: an XML file that is no image's layout (layout_unmatched)", async () => {
  await assertRefused(
    [
      ['scans/1.jpg', zolaImage],
      ['scans/notes.xml', zolaXml],
    ],
    'layout_unmatched',
    /entry "scans\/notes.xml" is an XML file but no image has the name "scans\/notes"/,
  );
  await assertRefused(
    [
      ['p.jpg', zolaImage],
      ['p.png', draculaImage],
      ['p.xml', zolaXml],
    ],
    'layout_unmatched',
    /"p.xml" could be the layout of "p.jpg" or "p.png"/,
  );
});

test('refused: a layout declaring a DTD or external entity (layout_unsafe_xml)', async () => {
  const xxe = zolaXml.toString('utf8').replace('<alto', '<!DOCTYPE alto [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<alto');
  await assertRefused(
    [
      ['1.jpg', zolaImage],
      ['1.xml', xxe],
    ],
    'layout_unsafe_xml',
    /entry "1.xml": .*document type declaration/,
  );
});

test('refused: a layout over the size limit (layout_too_large), checked on the bytes inflated', async () => {
  const big = `${zolaXml.toString('utf8')}${' '.repeat(MAX_LAYOUT_BYTES)}`;
  await assertRefused(
    [
      ['1.jpg', zolaImage],
      ['1.xml', big],
    ],
    'layout_too_large',
    /entry "1.xml" (declares \d+ bytes|is larger than)/,
    { maxCompressionRatio: 1_000_000 },
  );
});

test('refused: a layout that is not usable PageXML or ALTO (layout_invalid)', async () => {
  await assertRefused(
    [
      ['1.jpg', zolaImage],
      ['1.xml', '<html><body>not a layout</body></html>'],
    ],
    'layout_invalid',
    /entry "1.xml": .*root element is <html>/,
  );
  await assertRefused(
    [
      ['1.jpg', zolaImage],
      ['1.xml', zolaXml.toString('utf8').replace(/POINTS="[^"]+"/, 'POINTS="1 2 x 4 5 6"')],
    ],
    'layout_invalid',
    /entry "1.xml": .*not pairs of numbers/,
  );
});

test('refused: the layout of a page of another shape (layout_size_mismatch)', async () => {
  await assertRefused(
    [
      ['1.png', draculaImage],
      ['1.xml', kantXml],
    ],
    'layout_size_mismatch',
    /entry "1.xml": the layout file describes a 1457×2083 page but the image is/,
  );
});

test('refused: a layout line wholly outside the image (layout_outside_image)', async () => {
  const moved = zolaXml
    .toString('utf8')
    .replace(/(<TextLine[^>]*>\s*<Shape><Polygon POINTS=)"[^"]+"/, '$1"9000 9000 9100 9000 9100 9100 9000 9100"');
  await assertRefused(
    [
      ['1.jpg', zolaImage],
      ['1.xml', moved],
    ],
    'layout_outside_image',
    /entry "1.xml": layout line eSc_line_b7a50352 lies outside the 2530×3284 image/,
  );
});
