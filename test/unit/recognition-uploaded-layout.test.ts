// Bring your own layout: real PageXML and ALTO files (test/fixtures/export) read as a page's
// layout, and every kind of unusable file refused with its stable code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { rectCorners } from '../../src/recognition/page/geometry.ts';
import {
  LayoutError,
  layoutRegionsOf,
  MAX_LAYOUT_BYTES,
  MAX_LAYOUT_REGIONS,
  parseUploadedLayout,
  type LayoutErrorCode,
} from '../../src/recognition/layout/uploaded-layout.ts';
import { readUploadedLayout } from '../../src/recognition/layout/uploaded-layout-thread.ts';
import { turnsDuring } from '../support/event-loop-turns.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/export');
const zola = readFileSync(path.join(FIXTURES, 'cremma19_zola_f207.xml'), 'utf8'); // ALTO v4, 2530×3284
const kant = readFileSync(path.join(FIXTURES, 'ocrd_kant_aufklaerung_1784_0017.xml'), 'utf8'); // PAGE 2019, 1457×2083
const ZOLA = { width: 2530, height: 3284 };
const KANT = { width: 1457, height: 2083 };

function refused(xml: string | Buffer, image: { width: number; height: number }, code: LayoutErrorCode, message: RegExp): void {
  assert.throws(
    () => parseUploadedLayout(xml, image),
    (error: unknown) => {
      assert.ok(error instanceof LayoutError, String(error));
      assert.equal(error.code, code);
      assert.match(error.message, message);
      return true;
    },
  );
}

const lines = (layout: ReturnType<typeof parseUploadedLayout>) => layout.regions.flatMap((region) => region.lines);

test('ALTO v4 (eScriptorium): blocks, lines, polygons, baselines and text kept in document order', () => {
  const layout = parseUploadedLayout(zola, ZOLA);
  assert.equal(layout.format, 'alto-v4');
  assert.equal(lines(layout).length, 25);
  assert.deepEqual(layout.warnings, []);
  const ids = [...zola.matchAll(/<TextLine[^>]*ID="([^"]+)"/g)].map((match) => match[1]);
  assert.deepEqual(
    lines(layout).map((line) => line.id),
    ids,
  );
  for (const line of lines(layout)) {
    assert.ok(line.polygon.length >= 3);
    assert.ok(line.baseline.length >= 2, line.id);
    assert.ok(line.polygon.every(([x, y]) => x >= 0 && x <= ZOLA.width && y >= 0 && y <= ZOLA.height));
  }
  assert.ok(lines(layout).some((line) => line.text.length > 10));
});

test('PAGE 2019 and 2013: regions in ReadingOrder, lines with Coords and Baseline', () => {
  const layout = parseUploadedLayout(kant, KANT);
  assert.equal(layout.format, 'page-2019');
  assert.equal(lines(layout).length, 24);
  const order = [...kant.matchAll(/<RegionRefIndexed[^>]*index="(\d+)"[^>]*regionRef="([^"]+)"/g)]
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((match) => match[2]);
  assert.deepEqual(
    layout.regions.map((region) => region.id).filter((id) => order.includes(id)),
    order.filter((id) => layout.regions.some((region) => region.id === id)),
  );
  const older = parseUploadedLayout(kant.replaceAll('pagecontent/2019-07-15', 'pagecontent/2013-07-15'), KANT);
  assert.equal(older.format, 'page-2013');
  assert.deepEqual(lines(older), lines(layout));
});

test('ALTO v2 and v3 namespaces are read alike', () => {
  for (const version of ['2', '3']) {
    const layout = parseUploadedLayout(zola.replaceAll('alto/ns-v4#', `alto/ns-v${version}#`), ZOLA);
    assert.equal(layout.format, `alto-v${version}`);
    assert.equal(lines(layout).length, 25);
  }
});

test('coordinates are scaled from the declared page size to the image, and clamped to it', () => {
  const half = parseUploadedLayout(zola, { width: ZOLA.width / 2, height: ZOLA.height / 2 });
  const full = parseUploadedLayout(zola, ZOLA);
  const [a, b] = [lines(half)[3].polygon[0], lines(full)[3].polygon[0]];
  assert.ok(Math.abs(a[0] - b[0] / 2) <= 1 && Math.abs(a[1] - b[1] / 2) <= 1, `${a} vs ${b}`);

  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageFilename="p.jpg" imageWidth="100" imageHeight="200">
<TextRegion id="r1" type="paragraph"><Coords points="-10,-10 150,-10 150,50 -10,50"/>
<TextLine id="l1"><Coords points="-20,10 130,10 130,40 -20,40"/><Baseline points="-20,35 130,35"/></TextLine>
<TextLine id="l2"><Baseline points="10,80 90,80"/></TextLine>
<TextLine id="l3"/>
</TextRegion></Page></PcGts>`;
  const layout = parseUploadedLayout(xml, { width: 100, height: 200 });
  assert.deepEqual(lines(layout)[0].polygon, [
    [0, 10],
    [100, 10],
    [100, 40],
    [0, 40],
  ]);
  assert.deepEqual(lines(layout)[0].baseline, [
    [0, 35],
    [100, 35],
  ]);
  assert.deepEqual(layout.regions[0].polygon[0], [0, 0]);
  // A line with only a baseline gets a band around it; one with neither is left out, said.
  assert.equal(lines(layout).length, 2);
  assert.ok(lines(layout)[1].polygon.length >= 4);
  assert.match(layout.warnings.join('\n'), /l3 has no outline or baseline/);
  // The engine gets one piece per line, holding the line's outline.
  const [region] = layoutRegionsOf(layout);
  const piece = region.lines[0].fragments[0];
  assert.equal(region.lines.length, 2);
  const corners = rectCorners(piece);
  assert.ok(Math.min(...corners.map(([x]) => x)) <= 0.5 && Math.max(...corners.map(([x]) => x)) >= 99.5);
});

test('refused: a DTD, external or internal entities (no entity is ever expanded)', () => {
  const external = `<?xml version="1.0"?><!DOCTYPE PcGts [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageWidth="10" imageHeight="10">&xxe;</Page></PcGts>`;
  refused(external, { width: 10, height: 10 }, 'layout_unsafe_xml', /document type declaration/);
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><alto xmlns="http://www.loc.gov/standards/alto/ns-v4#">&lol2;</alto>`;
  refused(laughs, { width: 10, height: 10 }, 'layout_unsafe_xml', /DTD/);
  refused(zola.replace('<alto', '<!DOCTYPE alto SYSTEM "http://example.com/alto.dtd">\n<alto'), ZOLA, 'layout_unsafe_xml', /DTD/);
  // An entity reference without a declaration is not well-formed.
  refused(zola.replace('<Description>', '<Description>&xxe;'), ZOLA, 'layout_invalid', /unknown entity &xxe;/);
});

test('refused: larger than the size limit, before reading it', () => {
  const big = Buffer.alloc(MAX_LAYOUT_BYTES + 1, 0x20);
  refused(big, ZOLA, 'layout_too_large', new RegExp(`at most ${MAX_LAYOUT_BYTES}`));
});

test('refused: not XML, not UTF-8, not PageXML or ALTO, an unsupported version, nesting too deep', () => {
  refused('%PDF-1.7 not xml', ZOLA, 'layout_invalid', /not accepted XML/);
  refused(zola.slice(0, zola.length / 2), ZOLA, 'layout_invalid', /unclosed element|not accepted XML/);
  refused(Buffer.from([0x3c, 0x61, 0xff, 0xfe, 0x3e]), ZOLA, 'layout_invalid', /not UTF-8/);
  refused('<?xml version="1.0" encoding="ISO-8859-1"?><alto/>', ZOLA, 'layout_invalid', /encoding ISO-8859-1/);
  refused('<html><body/></html>', ZOLA, 'layout_invalid', /root element is <html>/);
  refused(kant.replaceAll('pagecontent/2019-07-15', 'pagecontent/2010-03-19'), KANT, 'layout_invalid', /PAGE 2013-07-15 and 2019-07-15/);
  refused(zola.replaceAll('alto/ns-v4#', 'alto/ns-v1#'), ZOLA, 'layout_invalid', /ALTO v2, v3 and v4/);
  refused(
    `<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#">${'<a>'.repeat(100)}${'</a>'.repeat(100)}</alto>`,
    ZOLA,
    'layout_invalid',
    /nested deeper/,
  );
});

test('refused: coordinates that are not numbers', () => {
  refused(zola.replace(/POINTS="[^"]+"/, 'POINTS="10,20 abc,40 50,60"'), ZOLA, 'layout_invalid', /not pairs of numbers/);
  refused(kant.replace(/(<TextLine[^>]*>\s*<Coords points=)"[^"]+"/, '$1"1,2 3"'), KANT, 'layout_invalid', /not pairs of numbers/);
});

test('refused: a page of another shape, a line wholly outside the image', () => {
  refused(zola, { width: ZOLA.height, height: ZOLA.width }, 'layout_size_mismatch', /2530×3284 page but the image is 3284×2530/);
  const outside = `<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageWidth="100" imageHeight="200">
<TextRegion id="r1"><TextLine id="far"><Coords points="300,10 400,10 400,40 300,40"/></TextLine></TextRegion></Page></PcGts>`;
  refused(outside, { width: 100, height: 200 }, 'layout_outside_image', /line far lies outside the 100×200 image/);
});

/** A PAGE 2019 file of `count` empty text regions, each named in the reading order. */
function manyRegions(count: number): string {
  const ids = Array.from({ length: count }, (_, index) => `r${index}`);
  return (
    '<?xml version="1.0" encoding="UTF-8"?><PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15">' +
    `<Page imageWidth="${KANT.width}" imageHeight="${KANT.height}"><ReadingOrder><OrderedGroup id="g">` +
    ids.map((id, index) => `<RegionRefIndexed index="${index}" regionRef="${id}"/>`).join('') +
    '</OrderedGroup></ReadingOrder>' +
    ids.map((id) => `<TextRegion id="${id}"><Coords points="1,1 9,1 9,9 1,9"/></TextRegion>`).join('') +
    '</Page></PcGts>'
  );
}

test('refused: more text regions than the limit (their reading order used to cost the square of their number)', () => {
  refused(manyRegions(MAX_LAYOUT_REGIONS + 1), KANT, 'layout_too_large', /has 20001 text regions; at most 20000/);
  assert.equal(parseUploadedLayout(manyRegions(MAX_LAYOUT_REGIONS), KANT).regions.length, MAX_LAYOUT_REGIONS);
});

test('read in a thread of its own: the same layout, the same coded refusals, and the event loop turns meanwhile', async () => {
  // A small file is read on the calling thread, a large one in a thread: the same layout either way.
  assert.deepEqual(await readUploadedLayout(Buffer.from(kant), KANT), parseUploadedLayout(kant, KANT));
  const large = manyRegions(MAX_LAYOUT_REGIONS);
  assert.deepEqual(await readUploadedLayout(Buffer.from(large), KANT), parseUploadedLayout(large, KANT));
  await assert.rejects(readUploadedLayout(Buffer.from(manyRegions(MAX_LAYOUT_REGIONS + 1)), KANT), (error: unknown) => {
    assert.ok(error instanceof LayoutError, String(error));
    assert.equal(error.code, 'layout_too_large');
    return true;
  });
  const file = Buffer.from(manyRegions(MAX_LAYOUT_REGIONS));
  const { turns } = await turnsDuring(() => readUploadedLayout(file, KANT));
  assert.ok(turns > 20, `${turns} turns of the event loop while a 20 000-region file was read`);
  // A cancelled job stops the thread: the read ends with the signal's reason, not the layout.
  const cancelled = new AbortController();
  const reading2 = readUploadedLayout(Buffer.from(manyRegions(MAX_LAYOUT_REGIONS)), KANT, cancelled.signal);
  cancelled.abort(new Error('the job was cancelled'));
  await assert.rejects(reading2, /the job was cancelled/);
});
