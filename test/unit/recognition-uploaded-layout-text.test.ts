// The uploaded-layout reader keeps each line's transcription, as ground truth needs it: real
// Transkribus PageXML (2013), eScriptorium ALTO (v4) and OCR-D PageXML (2019) read to exactly
// the lines their datasets publish (the `.gt.txt` extracts of test/fixtures, README there), a
// line transcribed word by word only, and lines outside the image left out and said (not refused)
// when the caller asks.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { LayoutError, parseUploadedLayout } from '../../src/recognition/layout/uploaded-layout.ts';
import { readUploadedLayout } from '../../src/recognition/layout/uploaded-layout-thread.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
const read = (file: string) => readFileSync(path.join(FIXTURES, file), 'utf8');
const gtLines = (file: string) => read(file).replace(/\n$/, '').split('\n');
const texts = (layout: ReturnType<typeof parseUploadedLayout>) => layout.regions.flatMap((region) => region.lines.map((line) => line.text));

test('Transkribus PageXML 2013: each line the TextEquiv/Unicode the export carries', () => {
  const page = parseUploadedLayout(read('models/hooker_JDH_2_3_6_79_001.xml'), { width: 678, height: 1055 });
  assert.equal(page.format, 'page-2013');
  assert.deepEqual(texts(page), gtLines('models/hooker_JDH_2_3_6_79_001.gt.txt'));
  const other = parseUploadedLayout(read('models/hooker_JDH_2_16_144_002.xml'), { width: 1448, height: 2152 });
  assert.deepEqual(texts(other), gtLines('models/hooker_JDH_2_16_144_002.gt.txt'));
});

test('eScriptorium ALTO v4: each line its String@CONTENT, joined by spaces', () => {
  const page = parseUploadedLayout(read('pages/peraire_test_B.12.japon3_0048.xml'), { width: 3345, height: 4365 });
  assert.equal(page.format, 'alto-v4');
  assert.deepEqual(texts(page), gtLines('pages/peraire_test_B.12.japon3_0048.gt.txt'));
  const printed = parseUploadedLayout(read('pages/fondue_en_print_dracula_page_51.xml'), { width: 2550, height: 3300 });
  // The dataset's extract keeps a leading SP where a line starts with one; the reader trims.
  assert.deepEqual(
    texts(printed),
    gtLines('pages/fondue_en_print_dracula_page_51.gt.txt').map((line) => line.trim()),
  );
});

test('PageXML 2019 (OCR-D): historical glyphs kept as written; a line with only Word TextEquivs reads as its words joined', () => {
  const kant = read('export/ocrd_kant_aufklaerung_1784_0017.xml');
  const size = { width: 1457, height: 2083 };
  const lines = texts(parseUploadedLayout(kant, size));
  assert.ok(
    lines.some((line) => line.includes('ſ')),
    'ſ kept',
  );
  // The same file with every line-level TextEquiv removed (the Words' stay): the words, joined by spaces.
  const wordsOnly = kant.replace(/(<\/Word>\s*)<TextEquiv>\s*<Unicode>[^<]*<\/Unicode>\s*<\/TextEquiv>/g, '$1');
  assert.notEqual(wordsOnly, kant);
  const fromWords = texts(parseUploadedLayout(wordsOnly, size));
  assert.equal(fromWords.length, lines.length);
  for (const [index, line] of fromWords.entries()) {
    assert.notEqual(line, '', `line ${index + 1}`);
    assert.equal(line.replace(/ /g, ''), lines[index].replace(/ /g, ''), `line ${index + 1}: the same characters`);
  }
  assert.ok(fromWords.some((line, index) => line !== lines[index] || line.includes(' ')));
});

test('a line without any text reads as empty (ground truth counts it as without text)', () => {
  const xml = `<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageWidth="100" imageHeight="100">
<TextRegion id="r"><TextLine id="a"><Coords points="1,1 90,1 90,20 1,20"/><TextEquiv><Unicode></Unicode></TextEquiv></TextLine>
<TextLine id="b"><Coords points="1,30 90,30 90,50 1,50"/></TextLine>
<TextLine id="c"><Coords points="1,60 90,60 90,80 1,80"/><TextEquiv index="2"><Unicode>second</Unicode></TextEquiv><TextEquiv index="1"><Unicode>first</Unicode></TextEquiv></TextLine>
</TextRegion></Page></PcGts>`;
  assert.deepEqual(texts(parseUploadedLayout(xml, { width: 100, height: 100 })), ['', '', 'first']);
});

test('lines outside the image: refused by default, left out with their reason and text when asked (skip)', async () => {
  const xml = `<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageWidth="100" imageHeight="200">
<TextRegion id="r1">
<TextLine id="in"><Coords points="10,10 90,10 90,40 10,40"/><TextEquiv><Unicode>inside</Unicode></TextEquiv></TextLine>
<TextLine id="far"><Coords points="300,10 400,10 400,40 300,40"/><TextEquiv><Unicode>far away</Unicode></TextEquiv></TextLine>
<TextLine id="none"><TextEquiv><Unicode>no geometry</Unicode></TextEquiv></TextLine>
</TextRegion></Page></PcGts>`;
  const image = { width: 100, height: 200 };
  assert.throws(
    () => parseUploadedLayout(xml, image),
    (error: unknown) => error instanceof LayoutError && error.code === 'layout_outside_image',
  );
  const layout = parseUploadedLayout(xml, image, { outsideImage: 'skip' });
  assert.deepEqual(texts(layout), ['inside']);
  assert.deepEqual(layout.leftOut, [
    { id: 'far', reason: 'outside_image', text: 'far away' },
    { id: 'none', reason: 'no_geometry', text: 'no geometry' },
  ]);
  assert.match(layout.warnings.join('\n'), /line far lies outside the 100×200 image; left out/);
  // The same through the reader a ZIP's files go through (a thread for large files).
  assert.deepEqual(await readUploadedLayout(Buffer.from(xml), image, undefined, { outsideImage: 'skip' }), layout);
});
