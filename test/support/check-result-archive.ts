// Checks a result archive end to end, with independent readers (yauzl, xmllint-wasm, pdf.js,
// pdf-lib's parser), and returns its parsed manifest. Used by the export integration tests and
// by the end-to-end test of the HTTP API.
//
// It checks: the ZIP's entries against manifest.json (every file listed, sizes, sha256; no
// stray files); the page list (numbers 1..n, file names); every PageXML file against the PAGE
// 2019-07-15 XSD and every ALTO file against the ALTO 4.4 XSD; that PageXML, ALTO and the text
// file of a page say the same text; and, when the archive has a PDF: one page per page, the
// text extracted by pdf.js equals the page's text (modulo whitespace), each word of the text
// layer lies inside its ALTO String box, all fonts are embedded with a ToUnicode map, there is
// a document id and no encryption, and for pdfa-2b the PDF/A markers (XMP pdfaid part 2 /
// conformance B, title, producer, dates; sRGB output intent with an embedded ICC profile).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { PDFArray, PDFDict, PDFDocument, PDFName, type PDFRawStream, PDFRef, PDFStream, decodePDFRawStream } from 'pdf-lib';
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs';
import yauzl from 'yauzl';
import type { Manifest } from '../../src/export/manifest.ts';
import { childNamed, childrenNamed, descendantsNamed, parseXml, type XmlElement } from './xml-tree.ts';
import { validateAgainstSchema } from './xsd.ts';
import { validateAgainstTeiAll } from './tei-schema.ts';

/** The direction of writing in PDF space (y up) on a page the service turned by `orientation` to read it. */
const WRITING_DIRECTION: Record<number, [number, number]> = { 0: [1, 0], 90: [0, 1], 180: [-1, 0], 270: [0, -1] };

export interface ArchiveCheckOptions {
  /**
   * How the PDF's extracted text must match the page text: `ignore` (the default, as the
   * issue says: equal once all whitespace is removed) or `collapse` (equal once whitespace runs
   * are single spaces: word boundaries must survive extraction too).
   */
  whitespace?: 'ignore' | 'collapse';
  /** Allowed overshoot of a word outside its box, in PDF points (default 1). */
  tolerancePt?: number;
  /** Validate the TEI file against tei_all.rng too (about 10 s; default: only its lines are checked). */
  teiSchema?: boolean;
}

export interface CheckedPage {
  pageNumber: number;
  /** The page's text file. */
  text: string;
  /** Text extracted by pdf.js (null without PDF). */
  pdfText: string | null;
  /** Words of the PDF text layer checked against their ALTO boxes. */
  pdfWordsChecked: number;
}

export interface CheckedArchive {
  manifest: Manifest;
  files: Map<string, Buffer>;
  pages: CheckedPage[];
}

export async function checkResultArchive(archive: Buffer | string, options: ArchiveCheckOptions = {}): Promise<CheckedArchive> {
  const zip = typeof archive === 'string' ? await readFile(archive) : archive;
  const files = await readZip(zip);
  const manifestBytes = files.get('manifest.json');
  assert.ok(manifestBytes, 'the archive has no manifest.json');
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as Manifest;
  assert.equal(manifest.schema, 'hwr.result-archive/1', 'manifest schema');

  // Files: exactly the listed ones, with their sizes and checksums.
  const listed = new Map(manifest.files.map((file) => [file.path, file]));
  assert.equal(listed.size, manifest.files.length, 'manifest lists a file twice');
  const present = [...files.keys()].filter((name) => name !== 'manifest.json').sort();
  assert.deepEqual(present, [...listed.keys()].sort(), 'archive entries differ from the manifest file list');
  for (const [name, file] of listed) {
    const body = files.get(name)!;
    assert.equal(body.length, file.bytes, `${name}: size differs from the manifest`);
    assert.equal(sha256(body), file.sha256, `${name}: sha256 differs from the manifest`);
  }

  // Pages.
  assert.equal(manifest.page_count, manifest.pages.length, 'page_count');
  manifest.pages.forEach((page, index) => assert.equal(page.page_number, index + 1, 'pages are numbered 1..n in order'));
  const pageXml = manifest.pages.map((page) => ({ fileName: page.files.page, contents: utf8(files, page.files.page) }));
  const altoXml = manifest.pages.map((page) => ({ fileName: page.files.alto, contents: utf8(files, page.files.alto) }));
  assert.deepEqual(await validateAgainstSchema('page', pageXml), [], 'PageXML files valid against pagecontent-2019-07-15.xsd');
  assert.deepEqual(await validateAgainstSchema('alto', altoXml), [], 'ALTO files valid against alto-4-4.xsd');

  const altoWords: AltoWord[][] = [];
  const altoSizes: Array<{ width: number; height: number }> = [];
  const pages: CheckedPage[] = manifest.pages.map((page, index) => {
    const text = utf8(files, page.files.text);
    const textLines = text.split('\n').filter((line) => line.trim() !== '');
    const pcGts = parseXml(pageXml[index].contents);
    const pageElement = childNamed(pcGts, 'Page')!;
    assert.equal(pageElement.attributes.imageFilename, page.source.name, `${page.files.page}: imageFilename`);
    assert.equal(Number(pageElement.attributes.imageWidth), page.image.width, `${page.files.page}: imageWidth`);
    assert.equal(Number(pageElement.attributes.imageHeight), page.image.height, `${page.files.page}: imageHeight`);
    const pageLines = descendantsNamed(pageElement, 'TextLine')
      // The main text: the TextEquiv of index 0 where a corrected line keeps the machine's reading beside it (index 1).
      .map((line) => {
        const equivs = childrenNamed(line, 'TextEquiv');
        return childNamed(equivs.find((equiv) => equiv.attributes.index === '0') ?? equivs.at(-1)!, 'Unicode')!.text;
      })
      .filter((line) => line.trim() !== '');
    assert.deepEqual(pageLines.map(collapse), textLines.map(collapse), `${page.files.page}: lines differ from ${page.files.text}`);

    const alto = parseXml(altoXml[index].contents);
    const altoPage = descendantsNamed(alto, 'Page')[0];
    altoSizes.push({ width: Number(altoPage.attributes.WIDTH), height: Number(altoPage.attributes.HEIGHT) });
    const altoLines = descendantsNamed(alto, 'TextLine').map((line) => childrenNamed(line, 'String'));
    const altoText = altoLines
      .map((strings) =>
        strings
          .map((string) => string.attributes.CONTENT)
          .filter((content) => content !== '')
          .join(' '),
      )
      .filter((line) => line !== '');
    assert.deepEqual(altoText.map(collapse), textLines.map(collapse), `${page.files.alto}: lines differ from ${page.files.text}`);
    altoWords.push(
      altoLines
        .flat()
        .filter((string) => string.attributes.CONTENT !== '')
        .map(altoWord),
    );
    return { pageNumber: page.page_number, text, pdfText: null, pdfWordsChecked: 0 };
  });

  await checkJobFiles(manifest, files, pages, options);

  if (manifest.options.pdf_format === 'none') {
    assert.equal(manifest.pdf, null, 'pdf_format=none: the manifest names no PDF');
    assert.equal([...files.keys()].filter((name) => name.endsWith('.pdf')).length, 0, 'pdf_format=none: no PDF in the archive');
  } else {
    assert.ok(manifest.pdf, 'the manifest names the PDF');
    assert.equal(manifest.pdf.format, manifest.options.pdf_format, 'the PDF has the requested format');
    const pdf = files.get(manifest.pdf.path);
    assert.ok(pdf, `the archive has ${manifest.pdf.path}`);
    await checkPdfStructure(pdf, manifest.pdf.format);
    await checkPdfText(
      pdf,
      pages,
      altoWords,
      altoSizes,
      manifest.pages.map((page) => page.orientation),
      options,
    );
  }
  return { manifest, files, pages };
}

interface AltoWord {
  text: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

function altoWord(string: XmlElement): AltoWord {
  const a = string.attributes;
  return { text: a.CONTENT, x: Number(a.HPOS), y: Number(a.VPOS), width: Number(a.WIDTH), height: Number(a.HEIGHT) };
}

/** PDF/A-2b markers and the rules that hold for every PDF we write, read with pdf-lib's parser. */
async function checkPdfStructure(pdf: Buffer, format: 'pdfa-2b' | 'pdf'): Promise<void> {
  assert.equal(pdf.subarray(0, 8).toString('latin1'), '%PDF-1.7', 'PDF header');
  assert.ok(
    [...pdf.subarray(10, 14)].every((byte) => byte > 127),
    'binary comment after the header',
  );
  const document = await PDFDocument.load(pdf, { updateMetadata: false });
  const trailer = document.context.trailerInfo;
  assert.equal(trailer.Encrypt, undefined, 'the PDF is not encrypted');
  assert.ok(trailer.ID instanceof PDFArray && trailer.ID.size() === 2, 'the trailer has a document ID');

  for (const [, object] of document.context.enumerateIndirectObjects()) {
    if (!(object instanceof PDFDict) || object.get(PDFName.of('Type')) !== PDFName.of('Font')) continue;
    const subtype = object.get(PDFName.of('Subtype'));
    if (subtype === PDFName.of('Type0')) {
      assert.ok(object.get(PDFName.of('ToUnicode')), 'Type0 font has a ToUnicode map');
      continue;
    }
    const descriptor = document.context.lookup(object.get(PDFName.of('FontDescriptor')), PDFDict);
    const embedded = ['FontFile', 'FontFile2', 'FontFile3'].some((key) => descriptor.get(PDFName.of(key)) instanceof PDFRef);
    assert.ok(embedded, `font ${object.get(PDFName.of('BaseFont'))} is embedded`);
  }

  const catalog = document.catalog;
  const metadata = document.context.lookup(catalog.get(PDFName.of('Metadata')), PDFStream) as PDFRawStream;
  assert.equal(metadata.dict.get(PDFName.of('Filter')), undefined, 'the XMP metadata stream is not compressed');
  const xmp = Buffer.from(metadata.getContents()).toString('utf8');
  const info = document.context.lookup(trailer.Info, PDFDict);
  for (const key of ['Title', 'Producer', 'CreationDate', 'ModDate']) assert.ok(info.get(PDFName.of(key)), `Info has ${key}`);
  for (const element of ['dc:title', 'pdf:Producer', 'xmp:CreateDate', 'xmp:ModifyDate', 'xmpMM:DocumentID']) {
    assert.match(xmp, new RegExp(`<${element}>`), `XMP has ${element}`);
  }
  assert.equal(document.getTitle(), /<rdf:li xml:lang="x-default">([^<]*)<\/rdf:li>/.exec(xmp)?.[1], 'Info Title equals XMP dc:title');
  assert.equal(document.getProducer(), /<pdf:Producer>([^<]*)</.exec(xmp)?.[1], 'Info Producer equals XMP pdf:Producer');

  if (format === 'pdfa-2b') {
    assert.match(xmp, /<pdfaid:part>2<\/pdfaid:part>/, 'XMP pdfaid:part 2');
    assert.match(xmp, /<pdfaid:conformance>B<\/pdfaid:conformance>/, 'XMP pdfaid:conformance B');
    const intents = document.context.lookup(catalog.get(PDFName.of('OutputIntents')), PDFArray);
    assert.ok(intents && intents.size() >= 1, 'the catalog has an OutputIntents array');
    const intent = document.context.lookup(intents.get(0), PDFDict);
    assert.equal(intent.get(PDFName.of('S')), PDFName.of('GTS_PDFA1'), 'output intent subtype GTS_PDFA1');
    const profile = document.context.lookup(intent.get(PDFName.of('DestOutputProfile')), PDFStream) as PDFRawStream;
    assert.equal(profile.dict.get(PDFName.of('N'))?.toString(), '3', 'ICC profile has 3 components (RGB)');
    const icc = Buffer.from(decodePDFRawStream(profile).decode());
    assert.equal(icc.toString('latin1', 36, 40), 'acsp', 'embedded ICC profile signature');
    assert.equal(icc.toString('latin1', 16, 20), 'RGB ', 'embedded ICC profile colour space');
  } else {
    assert.doesNotMatch(xmp, /pdfaid:part/, 'a plain PDF does not claim PDF/A');
  }
}

/** Text layer: extracted text per page, and word placement against the ALTO word boxes. */
async function checkPdfText(
  pdf: Buffer,
  pages: CheckedPage[],
  altoWords: AltoWord[][],
  altoSizes: Array<{ width: number; height: number }>,
  /** Each page's turn (the manifest's `orientation`): which way its text runs. */
  orientations: number[],
  options: ArchiveCheckOptions,
): Promise<void> {
  const tolerance = options.tolerancePt ?? 1;
  const normalize = options.whitespace === 'collapse' ? collapse : (text: string) => text.replace(/\s+/gu, '');
  const loading = getDocument({ data: new Uint8Array(pdf), verbosity: 0 });
  const document = await loading.promise;
  try {
    assert.equal(document.numPages, pages.length, 'the PDF has one page per page');
    for (const [index, page] of pages.entries()) {
      const pdfPage = await document.getPage(index + 1);
      const content = await pdfPage.getTextContent({ disableNormalization: true });
      page.pdfText = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
      assert.equal(normalize(page.pdfText), normalize(page.text), `PDF page ${index + 1}: extracted text differs from the page text`);

      // Text runs drawn by Tm + Tj, as pdf.js decodes them; spaces are the separators.
      const [, , pageWidthPt, pageHeightPt] = pdfPage.view;
      const scale = pageWidthPt / altoSizes[index].width;
      assert.ok(Math.abs(pageHeightPt / altoSizes[index].height - scale) < 1e-3, `PDF page ${index + 1}: aspect ratio`);
      const operators = await pdfPage.getOperatorList();
      const runs: Array<{ text: string; start: [number, number]; end: [number, number]; up: [number, number] }> = [];
      let matrix: ArrayLike<number> = [1, 0, 0, 1, 0, 0];
      let renderingMode = 0;
      operators.fnArray.forEach((fn, op) => {
        const args = operators.argsArray[op];
        if (fn === OPS.setTextRenderingMode) renderingMode = args[0];
        if (fn === OPS.setTextMatrix) matrix = args[0] ?? args;
        if (fn !== OPS.showText) return;
        assert.equal(renderingMode, 3, `PDF page ${index + 1}: the text layer is invisible (rendering mode 3)`);
        const glyphs = (args[0] as Array<{ unicode: string; width: number } | number>).filter((glyph) => typeof glyph !== 'number');
        const text = glyphs.map((glyph) => glyph.unicode).join('');
        if (text.trim() === '') return;
        // the run from its origin along the text matrix's x axis (a page read turned writes along the writing's direction)
        const advance = glyphs.reduce((sum, glyph) => sum + glyph.width, 0) / 1000;
        const [a, b, c, d, e, f] = Array.from(matrix);
        runs.push({ text, start: [e, f], end: [e + a * advance, f + b * advance], up: [c, d] });
      });
      const words = altoWords[index];
      assert.deepEqual(
        runs.map((run) => run.text),
        words.map((word) => word.text),
        `PDF page ${index + 1}: text layer words equal the ALTO Strings`,
      );
      runs.forEach((run, wordIndex) => {
        const word = words[wordIndex];
        const left = word.x * scale;
        const right = (word.x + word.width) * scale;
        const top = pageHeightPt - word.y * scale;
        const bottom = pageHeightPt - (word.y + word.height) * scale;
        const where = `PDF page ${index + 1}, word ${wordIndex + 1} ${JSON.stringify(word.text)}`;
        for (const [x, y] of [run.start, run.end]) {
          assert.ok(x >= left - tolerance && x <= right + tolerance, `${where}: x ${x} outside ${left}..${right}`);
          assert.ok(y >= bottom - tolerance && y <= top + tolerance, `${where}: baseline at y ${y} outside ${bottom}..${top}`);
        }
        // the text runs the way the writing does in the image: left to right, or turned with the page
        const writing = WRITING_DIRECTION[orientations[index]];
        assert.ok(
          (run.end[0] - run.start[0]) * writing[0] + (run.end[1] - run.start[1]) * writing[1] > 0,
          `${where}: runs ${run.start}..${run.end}, not along ${writing}`,
        );
        // the font size is the length of the matrix's up axis; the box's extent that way bounds it
        const size = Math.hypot(run.up[0], run.up[1]);
        const across = (Math.abs(run.up[0]) * (right - left) + Math.abs(run.up[1]) * (top - bottom)) / size;
        assert.ok(size > 0 && size <= across + tolerance, `${where}: size ${size} taller than the box (${across})`);
      });
      page.pdfWordsChecked = runs.length;
    }
  } finally {
    await loading.destroy();
  }
}

function collapse(text: string): string {
  return text.replace(/\s+/gu, ' ').trim();
}

/** The job's text (every page's text file, form feeds between) and its TEI (a line per lb, the same text; optionally tei_all.rng). */
async function checkJobFiles(
  manifest: Manifest,
  files: Map<string, Buffer>,
  pages: CheckedPage[],
  options: ArchiveCheckOptions,
): Promise<void> {
  assert.ok(manifest.text && manifest.tei, 'the manifest names the job text and the TEI');
  assert.equal(
    utf8(files, manifest.text.path),
    pages.map((page) => page.text).join('\f'),
    `${manifest.text.path}: the pages' texts in order`,
  );
  const tei = utf8(files, manifest.tei.path);
  const root = parseXml(tei);
  assert.equal(descendantsNamed(root, 'surface').length, manifest.pages.length, `${manifest.tei.path}: a surface per page`);
  assert.equal(descendantsNamed(root, 'pb').length, manifest.pages.length, `${manifest.tei.path}: a pb per page`);
  const lineTexts = [...tei.matchAll(/<lb [^>]*\/>([^\n]*)\n/g)]
    .map((match) => match[1].replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#13;/g, '\r').replace(/&amp;/g, '&'))
    .filter((line) => line.trim() !== '');
  const textLines = pages.flatMap((page) => page.text.split('\n').filter((line) => line.trim() !== ''));
  assert.deepEqual(lineTexts.map(collapse), textLines.map(collapse), `${manifest.tei.path}: lines differ from the text files`);
  if (options.teiSchema)
    assert.deepEqual(await validateAgainstTeiAll([{ fileName: manifest.tei.path, contents: tei }]), [], 'TEI valid against tei_all.rng');
}

function utf8(files: Map<string, Buffer>, name: string): string {
  const body = files.get(name);
  assert.ok(body, `the archive has ${name}`);
  return body.toString('utf8');
}

function sha256(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

/** Every entry of a ZIP, by name; rejects duplicate and unsafe names. */
export async function readZip(zip: Buffer): Promise<Map<string, Buffer>> {
  const archive = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(zip, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (error, file) =>
      error ? reject(error) : resolve(file),
    ),
  );
  const files = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    archive.on('error', reject);
    archive.on('end', () => resolve());
    archive.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName.startsWith('/') || entry.fileName.split('/').includes('..'))
        return reject(new Error(`unsafe entry ${entry.fileName}`));
      if (files.has(entry.fileName)) return reject(new Error(`duplicate entry ${entry.fileName}`));
      archive.openReadStream(entry, (error, stream) => {
        if (error) return reject(error);
        const parts: Buffer[] = [];
        stream.on('data', (part: Buffer) => parts.push(part));
        stream.on('error', reject);
        stream.on('end', () => {
          files.set(entry.fileName, Buffer.concat(parts));
          archive.readEntry();
        });
      });
    });
    archive.readEntry();
  });
  return files;
}
