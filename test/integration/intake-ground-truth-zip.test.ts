// Ground-truth intake (src/intake/ground-truth-zip.ts) on real ZIPs of real exports: a
// Transkribus PageXML export (images with `page/` beside them, METS and metadata files), an
// eScriptorium ALTO export, an OCR-D workspace, and our own result archive with its page images;
// lines left out and counted; every refusal with its code; nothing stored after a refusal.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import yauzl from 'yauzl';
import yazl from 'yazl';
import type { CodedError } from '../../domain/errors.ts';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { readGroundTruth } from '../../src/intake/ground-truth.ts';
import { intakeGroundTruthZip, MIN_TRAINING_LINES } from '../../src/intake/ground-truth-zip.ts';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { fixturePages, stageExportJob } from '../support/export-job.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
const defaults = loadConfig({}).limits;
let root: string;
let blobs: FilesystemBlobStore;
let counter = 0;
const files: Record<string, Buffer> = {};

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-intake-ground-truth-'));
  blobs = new FilesystemBlobStore(path.join(root, 'blobs'));
  for (const file of [
    'models/hooker_JDH_2_3_6_79_001.jpg',
    'models/hooker_JDH_2_3_6_79_001.xml',
    'models/hooker_JDH_2_16_144_002.xml',
    'correction/hooker_JDH_2_16_144_002.jpg',
    'export/cremma19_zola_f207.jpg',
    'export/cremma19_zola_f207.xml',
    'export/ocrd_kant_aufklaerung_1784_0017.tif',
    'export/ocrd_kant_aufklaerung_1784_0017.xml',
    'zips/images/line-1.jpg',
  ]) {
    files[file] = await readFile(path.join(FIXTURES, file));
  }
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

type Entries = Array<[string, Buffer | string]>;

async function zipFile(entries: Entries): Promise<string> {
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
  const keyPrefix = `models/model-${(counter += 1)}/ground-truth`;
  return {
    keyPrefix,
    result: intakeGroundTruthZip(file, { limits: { ...defaults, ...limits }, blobs, keyPrefix, uploadName: 'truth.zip' }),
  };
}

async function stored(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of blobs.walk(prefix)) keys.push(entry.key);
  return keys.sort();
}

async function assertRefused(entries: Entries | string, code: string, detail: RegExp): Promise<void> {
  const file = typeof entries === 'string' ? entries : await zipFile(entries);
  const { keyPrefix, result } = intake(file);
  await assert.rejects(result, (error: CodedError) => {
    assert.equal(error.code, code, String(error));
    assert.equal(error.status, error.status === 413 ? 413 : 400);
    assert.match(error.message, detail);
    return true;
  });
  assert.deepEqual(await stored(keyPrefix), [], 'nothing is left behind');
}

// A Transkribus export: per document a folder of images, their PageXML in `page/`, and the
// document's METS and metadata (stand-ins here: the real files name Transkribus ids and URLs).
const METS = '<?xml version="1.0" encoding="UTF-8"?><mets:mets xmlns:mets="http://www.loc.gov/METS/"><mets:fileSec/></mets:mets>';
const TRANSKRIBUS_METADATA = '<?xml version="1.0" encoding="UTF-8"?><trpDocMetadata><docId>429660</docId></trpDocMetadata>';

function transkribusExport(pageXml = files['models/hooker_JDH_2_3_6_79_001.xml']): Entries {
  return [
    ['429660/Hooker letters/mets.xml', METS],
    ['429660/Hooker letters/metadata.xml', TRANSKRIBUS_METADATA],
    ['429660/Hooker letters/JDH_2_3_6_79_001.jpg', files['models/hooker_JDH_2_3_6_79_001.jpg']],
    ['429660/Hooker letters/JDH_2_16_144_002.jpg', files['correction/hooker_JDH_2_16_144_002.jpg']],
    ['429660/Hooker letters/page/JDH_2_3_6_79_001.xml', pageXml],
    ['429660/Hooker letters/page/JDH_2_16_144_002.xml', files['models/hooker_JDH_2_16_144_002.xml']],
  ];
}

const gtLines = async (file: string) => (await readFile(path.join(FIXTURES, file), 'utf8')).replace(/\n$/, '').split('\n');

describe('real exports', () => {
  test('Transkribus PageXML: images paired with page/<name>.xml by the image each names; METS and metadata ignored, said', async () => {
    const { keyPrefix, result } = intake(await zipFile(transkribusExport()));
    const intaken = await result;
    assert.equal(intaken.pagesTotal, 2);
    assert.equal(intaken.linesTotal, 22 + 12);
    assert.deepEqual(intaken.linesSkipped, { noText: 0, noGeometry: 0, outsideImage: 0, tooSmall: 0, unlearnableCharacters: 0 });
    assert.deepEqual(intaken.warnings, [
      'ignored 2 XML files that are not PageXML or ALTO: "429660/Hooker letters/metadata.xml", "429660/Hooker letters/mets.xml"',
    ]);
    const truth = await readGroundTruth(blobs, intaken.key);
    assert.equal(intaken.key, `${keyPrefix}/ground-truth.json`);
    // Natural order of the image paths: JDH_2_3… before JDH_2_16….
    assert.deepEqual(
      truth.pages.map((page) => [page.pageNumber, page.name, page.layoutName, page.layoutFormat, page.width, page.height]),
      [
        [1, '429660/Hooker letters/JDH_2_3_6_79_001.jpg', '429660/Hooker letters/page/JDH_2_3_6_79_001.xml', 'page-2013', 678, 1055],
        [2, '429660/Hooker letters/JDH_2_16_144_002.jpg', '429660/Hooker letters/page/JDH_2_16_144_002.xml', 'page-2013', 1448, 2152],
      ],
    );
    assert.deepEqual(
      truth.pages[0].lines.map((line) => line.text),
      await gtLines('models/hooker_JDH_2_3_6_79_001.gt.txt'),
    );
    assert.deepEqual(
      truth.pages[1].lines.map((line) => line.text),
      await gtLines('models/hooker_JDH_2_16_144_002.gt.txt'),
    );
    // The half-size image: its PageXML's 1356×2110 coordinates scaled to it.
    for (const line of truth.pages[0].lines) assert.ok(line.polygon.every(([x, y]) => x <= 678 && y <= 1055));
    assert.equal(truth.linesTotal, 34);
    assert.ok(truth.characters.includes('&') && truth.characters.includes('H'));
    // The images and the layout files as uploaded are stored; the image is the ZIP's, byte for byte.
    const image = await blobs.get(truth.pages[0].imageKey);
    assert.equal(createHash('sha256').update(image).digest('hex'), truth.pages[0].sha256);
    assert.ok(image.equals(files['models/hooker_JDH_2_3_6_79_001.jpg']));
    assert.ok((await blobs.get(truth.pages[1].layoutKey)).equals(files['models/hooker_JDH_2_16_144_002.xml']));
    assert.deepEqual(await stored(keyPrefix), [
      `${keyPrefix}/ground-truth.json`,
      `${keyPrefix}/pages/0001.jpg`,
      `${keyPrefix}/pages/0001.layout.xml`,
      `${keyPrefix}/pages/0002.jpg`,
      `${keyPrefix}/pages/0002.layout.xml`,
    ]);
  });

  test('eScriptorium ALTO: the XML beside its image, named after it; a METS file ignored', async () => {
    const { result } = intake(
      await zipFile([
        ['METS.xml', METS],
        ['f207.jpeg', files['export/cremma19_zola_f207.jpg']],
        ['f207.xml', files['export/cremma19_zola_f207.xml']],
      ]),
    );
    const intaken = await result;
    assert.equal(intaken.pagesTotal, 1);
    assert.equal(intaken.linesTotal, 25);
    const truth = await readGroundTruth(blobs, intaken.key);
    assert.equal(truth.pages[0].layoutFormat, 'alto-v4');
    assert.ok(truth.pages[0].lines.every((line) => line.text.length > 0 && line.baseline.length >= 2));
  });

  test('an OCR-D workspace: PAGE 2019 in its own folder, naming OCR-D-IMG/INPUT_0017.tif from the root', async () => {
    const { result } = intake(
      await zipFile([
        ['OCR-D-IMG/INPUT_0017.tif', files['export/ocrd_kant_aufklaerung_1784_0017.tif']],
        ['OCR-D-GT-PAGE/PAGE_0017_PAGE.xml', files['export/ocrd_kant_aufklaerung_1784_0017.xml']],
      ]),
    );
    const intaken = await result;
    assert.equal(intaken.linesTotal, 24);
    const truth = await readGroundTruth(blobs, intaken.key);
    assert.equal(truth.pages[0].layoutFormat, 'page-2019');
    assert.ok(truth.characters.includes('ſ'));
  });

  test('our own result archive with the page images: its PageXML read, its ALTO, text and manifest ignored and said', async () => {
    // A real archive from the export pipeline, of the zola page's ground truth as a job's result.
    const pages = (await fixturePages()).filter((page) => page.name.endsWith('cremma19_zola_f207.jpg'));
    const task = await stageExportJob(blobs, pages, { pdfFormat: 'none' });
    await createExportPipeline().exportJob(task, { blobs, signal: new AbortController().signal, log: pino({ level: 'silent' }) });
    const archive = await unzip(await blobs.get(task.archiveKey));
    assert.deepEqual(
      Object.keys(archive).sort(),
      [
        `${task.jobId}.tei.xml`,
        `${task.jobId}.txt`,
        'alto/0001_cremma19_zola_f207.xml',
        'manifest.json',
        'page/0001_cremma19_zola_f207.xml',
        'text/0001_cremma19_zola_f207.txt',
      ].sort(),
    );
    const { result } = intake(
      await zipFile([...Object.entries(archive), ['scans/cremma19_zola_f207.jpg', files['export/cremma19_zola_f207.jpg']]]),
    );
    const intaken = await result;
    assert.equal(intaken.pagesTotal, 1);
    assert.equal(intaken.linesTotal, 25);
    assert.deepEqual(intaken.warnings, [
      `ignored 1 XML file that is not PageXML or ALTO: "${task.jobId}.tei.xml"`,
      `ignored 3 files that are neither page images nor XML: "${task.jobId}.txt", "manifest.json", "text/0001_cremma19_zola_f207.txt"`,
      '"alto/0001_cremma19_zola_f207.xml" also describes "scans/cremma19_zola_f207.jpg"; its PageXML file "page/0001_cremma19_zola_f207.xml" was read',
    ]);
    const truth = await readGroundTruth(blobs, intaken.key);
    assert.equal(truth.pages[0].layoutFormat, 'page-2019');
    const direct = await readGroundTruth(
      blobs,
      (
        await intake(
          await zipFile([
            ['f207.jpeg', files['export/cremma19_zola_f207.jpg']],
            ['f207.xml', files['export/cremma19_zola_f207.xml']],
          ]),
        ).result
      ).key,
    );
    assert.deepEqual(
      truth.pages[0].lines.map((line) => line.text),
      direct.pages[0].lines.map((line) => line.text),
      'the archive carries the ground truth it was made of',
    );
  });
});

describe('lines left out and counted', () => {
  test('without text, outside the image, too small, with an unlearnable character: each counted, the rest kept', async () => {
    let xml = files['models/hooker_JDH_2_3_6_79_001.xml'].toString('utf8');
    xml = xml.replace('<Unicode>May 29 1908</Unicode>', '<Unicode> </Unicode>');
    xml = xml.replace(/(<TextLine id="r2l3"[^>]*>\s*<Coords points=")[^"]*"/, '$15000,5000 5100,5000 5100,5040 5000,5040"');
    xml = xml.replace(/(<TextLine id="r2l4"[^>]*>\s*<Coords points=")[^"]*"/, '$1828,300 1087,300 1087,310 828,310"');
    xml = xml.replace('<Unicode>Dear Hemsley</Unicode>', '<Unicode>Dear \uFFFDemsley</Unicode>');
    xml = xml.replace('<Unicode>them.</Unicode>', '<Unicode>the\u00ADm.</Unicode>');
    const { result } = intake(await zipFile(transkribusExport(Buffer.from(xml))));
    const intaken = await result;
    assert.deepEqual(intaken.linesSkipped, { noText: 1, noGeometry: 0, outsideImage: 1, tooSmall: 1, unlearnableCharacters: 1 });
    assert.equal(intaken.linesTotal, 34 - 4);
    assert.deepEqual(intaken.warnings.slice(1), [
      'left out 1 line with characters no model can learn (U+FFFD)',
      'removed invisible formatting characters (U+00AD) from the text of 1 line',
    ]);
    const truth = await readGroundTruth(blobs, intaken.key);
    assert.ok(truth.pages[0].lines.some((line) => line.text === 'them.'));
  });

  test('a page whose every line is left out is said; the other pages train', async () => {
    const xml = files['models/hooker_JDH_2_3_6_79_001.xml'].toString('utf8').replace(/<Unicode>[^<]*<\/Unicode>/g, '<Unicode/>');
    const entries = transkribusExport(Buffer.from(xml));
    const { result } = intake(
      await zipFile([
        ...entries,
        ['f207.jpeg', files['export/cremma19_zola_f207.jpg']],
        ['f207.xml', files['export/cremma19_zola_f207.xml']],
      ]),
    );
    const intaken = await result;
    assert.equal(intaken.linesTotal, 12 + 25);
    assert.equal(intaken.linesSkipped.noText, 22);
    assert.match(intaken.warnings.at(-1) ?? '', /^1 page has no usable line: "429660\/Hooker letters\/JDH_2_3_6_79_001.jpg"$/);
  });
});

describe('refused, and nothing stored', () => {
  test('page_without_layout: an image without its PageXML or ALTO', async () => {
    await assertRefused(
      [...transkribusExport(), ['429660/Hooker letters/JDH_extra.jpg', files['zips/images/line-1.jpg']]],
      'page_without_layout',
      /1 page image has no PageXML or ALTO file: "429660\/Hooker letters\/JDH_extra.jpg"/,
    );
  });

  test('layout_unmatched: a layout naming an image the ZIP does not have; two PageXML files of one image', async () => {
    await assertRefused(
      [
        ['f207.jpeg', files['export/cremma19_zola_f207.jpg']],
        ['f207.xml', files['export/cremma19_zola_f207.xml']],
        ['alto/other.xml', files['export/cremma19_zola_f207.xml'].toString('utf8').replace('f207.jpeg', 'f208.jpeg')],
      ],
      'layout_unmatched',
      /"alto\/other.xml" is a ALTO file but the image it names, "f208.jpeg", is not in the ZIP/,
    );
    await assertRefused(
      [...transkribusExport(), ['429660/Hooker letters/JDH_2_3_6_79_001.xml', files['models/hooker_JDH_2_3_6_79_001.xml']]],
      'layout_unmatched',
      /are all PageXML files of "429660\/Hooker letters\/JDH_2_3_6_79_001.jpg"; keep one/,
    );
  });

  test('no_usable_lines, too_few_lines (fewer than 20)', async () => {
    const empty = files['models/hooker_JDH_2_16_144_002.xml'].toString('utf8').replace(/<Unicode>[^<]*<\/Unicode>/g, '<Unicode></Unicode>');
    await assertRefused(
      [
        ['JDH_2_16_144_002.jpg', files['correction/hooker_JDH_2_16_144_002.jpg']],
        ['page/JDH_2_16_144_002.xml', empty],
      ],
      'no_usable_lines',
      /no line of the 1 pages can be trained on: 12 lines without text/,
    );
    assert.equal(MIN_TRAINING_LINES, 20);
    await assertRefused(
      [
        ['JDH_2_16_144_002.jpg', files['correction/hooker_JDH_2_16_144_002.jpg']],
        ['page/JDH_2_16_144_002.xml', files['models/hooker_JDH_2_16_144_002.xml']],
      ],
      'too_few_lines',
      /12 usable lines in 1 page; a training needs at least 20/,
    );
  });

  test('unlearnable_characters: one line in ten or more with them (a mis-decoded export)', async () => {
    const broken = files['models/hooker_JDH_2_3_6_79_001.xml'].toString('utf8').replace(/<Unicode>([^<]*)e/g, '<Unicode>$1\uFFFD');
    await assertRefused(
      transkribusExport(Buffer.from(broken)),
      'unlearnable_characters',
      /of 34 lines with text carry characters no model can learn \(U\+FFFD/,
    );
  });

  test("the ZIP's own refusals, as a scan's: encrypted, unsafe paths, bombs, unsafe XML", async () => {
    await assertRefused(path.join(FIXTURES, 'zips/encrypted.zip'), 'encrypted_zip', /encrypted/);
    await assertRefused(path.join(FIXTURES, 'zips/traversal-dotdot.zip'), 'unsafe_path', /entry/);
    await assertRefused(path.join(FIXTURES, 'zips/bomb-ratio.zip'), 'zip_bomb', /ratio|MAX_/);
    const dtd = files['export/cremma19_zola_f207.xml'].toString('utf8').replace('<alto', '<!DOCTYPE alto [<!ENTITY x "y">]>\n<alto');
    await assertRefused(
      [
        ['f207.jpeg', files['export/cremma19_zola_f207.jpg']],
        ['f207.xml', dtd],
      ],
      'layout_unsafe_xml',
      /"f207.xml": .*DTD|document type/,
    );
    await assertRefused([['notes.txt', 'no pages']], 'no_images', /contains no page images/);
    await assertRefused(
      [
        ['f207.jpeg', Buffer.from('not a jpeg at all')],
        ['f207.xml', files['export/cremma19_zola_f207.xml']],
      ],
      'not_an_image',
      /"f207.jpeg" is not an image/,
    );
  });
});

function unzip(buffer: Buffer): Promise<Record<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error);
      const entries: Record<string, Buffer> = {};
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError) return reject(streamError);
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('end', () => {
            entries[entry.fileName] = Buffer.concat(chunks);
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(entries));
      zip.readEntry();
    });
  });
}
