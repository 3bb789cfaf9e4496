import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderAlto } from '../../src/export/alto.ts';
import { prepareExportPage } from '../../src/export/export-page.ts';
import { validatePageResult } from '../../src/pipeline/page-result-reader.ts';
import { renderPageXml } from '../../src/export/pagexml.ts';
import { renderPlainText } from '../../src/export/plain-text.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { pageText } from '../../src/recognition/page/page-result.ts';
import { regionsTurnedBack } from '../../src/recognition/engine/turned-page.ts';
import { fixturePages } from '../support/export-job.ts';
import { layoutOnlyPage, syntheticPage } from '../support/synthetic-pages.ts';
import { childNamed, childrenNamed, descendantsNamed, parseXml } from '../support/xml-tree.ts';
import { validateAgainstSchema } from '../support/xsd.ts';

const timestamp = new Date('2025-01-02T03:04:05.678Z');

function render(page: PageResult) {
  const exportPage = prepareExportPage(validatePageResult(page, page.pageNumber));
  return {
    exportPage,
    page: renderPageXml(exportPage, { timestamp }),
    alto: renderAlto(exportPage, { timestamp }),
    text: renderPlainText(exportPage),
  };
}

async function assertValid(name: string, page: string, alto: string): Promise<void> {
  assert.deepEqual(await validateAgainstSchema('page', [{ fileName: `${name}.page.xml`, contents: page }]), []);
  assert.deepEqual(await validateAgainstSchema('alto', [{ fileName: `${name}.alto.xml`, contents: alto }]), []);
}

function pageLines(xml: string): string[] {
  return descendantsNamed(parseXml(xml), 'TextLine').map((line) => childNamed(childrenNamed(line, 'TextEquiv').at(-1)!, 'Unicode')!.text);
}

function altoLines(xml: string): string[] {
  return descendantsNamed(parseXml(xml), 'TextLine').map((line) =>
    childrenNamed(line, 'String')
      .map((string) => string.attributes.CONTENT)
      .filter(Boolean)
      .join(' '),
  );
}

describe('PageXML and ALTO export', () => {
  it('writes schema-valid files for real ground-truth pages and keeps their text exactly (ſ, ß, aͤ, é)', async () => {
    for (const staged of await fixturePages()) {
      const { page, alto, text } = render(staged.result);
      await assertValid(staged.name, page, alto);
      const expected = staged.result.regions.flatMap((region) => region.lines.map((line) => line.text));
      assert.deepEqual(pageLines(page), expected);
      assert.deepEqual(
        altoLines(alto).map((line) => line.replace(/\s+/g, ' ')),
        expected.map((line) => line.replace(/\s+/g, ' ').trim()),
      );
      assert.equal(text.replace(/\n+/g, '\n').trim(), pageText(staged.result).trim());
    }
  });

  it('escapes XML special characters in texts, names and attributes, and round-trips them', async () => {
    const { page, alto } = render(syntheticPage());
    await assertValid('synthetic', page, alto);
    assert.deepEqual(pageLines(page), ['Grüße & <Dank> "ſo" ä ß œ é', "Tom's café — naïve façade", 'Zwoͤlftes Stuͤk ⟦gestrichen⟧']);
    const root = parseXml(page);
    assert.equal(childNamed(root, 'Page')!.attributes.imageFilename, 'letters/Brief & "Nachtrag" <1>.jpg');
    const alt = parseXml(alto);
    assert.equal(descendantsNamed(alt, 'fileName')[0].text, 'letters/Brief & "Nachtrag" <1>.jpg');
    assert.deepEqual(
      descendantsNamed(alt, 'String')
        .slice(0, 3)
        .map((string) => string.attributes.CONTENT),
      ['Grüße', '&', '<Dank>'],
    );
  });

  it('writes metadata: creator, one timestamp, models, correction, reading order, confidences, baselines', () => {
    const { page, alto } = render(syntheticPage());
    const root = parseXml(page);
    const metadata = childNamed(root, 'Metadata')!;
    assert.equal(childNamed(metadata, 'Creator')!.text, 'hwr 0.1.0');
    assert.equal(childNamed(metadata, 'Created')!.text, '2025-01-02T03:04:05Z');
    assert.equal(childNamed(metadata, 'LastChange')!.text, '2025-01-02T03:04:05Z');
    assert.deepEqual(
      childrenNamed(metadata, 'MetadataItem').map((item) => `${item.attributes.name}=${item.attributes.value}`),
      ['detection=dbnet-lines 2024.1', 'recognition=trocr-hw 3.2', 'correction=gemini gemini-2.5-flash'],
    );
    assert.deepEqual(
      descendantsNamed(root, 'RegionRefIndexed').map((ref) => ref.attributes.regionRef),
      ['r1', 'r2'],
    );
    const regions = descendantsNamed(root, 'TextRegion');
    assert.equal(regions[0].attributes.type, 'paragraph');
    assert.equal(regions[1].attributes.type, undefined, 'unknown region types are not put into @type');
    assert.equal(regions[1].attributes.custom, 'structure {type:signature;}');
    const firstLine = descendantsNamed(root, 'TextLine')[0];
    assert.match(childNamed(firstLine, 'Baseline')!.attributes.points, /^100,148 \d+,150$/);
    assert.equal(childrenNamed(firstLine, 'TextEquiv')[0].attributes.conf, '0.91');
    assert.equal(childrenNamed(firstLine, 'Word').length, 8);
    assert.equal(childrenNamed(childrenNamed(firstLine, 'Word')[0], 'TextEquiv')[0].attributes.conf, '0.91');

    const altoRoot = parseXml(alto);
    assert.equal(descendantsNamed(altoRoot, 'MeasurementUnit')[0].text, 'pixel');
    assert.deepEqual(
      descendantsNamed(altoRoot, 'processingDateTime').map((element) => element.text),
      ['2025-01-02T03:04:05Z', '2025-01-02T03:04:05Z', '2025-01-02T03:04:05Z'],
    );
    assert.deepEqual(
      descendantsNamed(altoRoot, 'softwareName').map((element) => element.text),
      ['hwr', 'hwr', 'hwr'],
    );
    const string = descendantsNamed(altoRoot, 'String')[0].attributes;
    assert.deepEqual([string.HPOS, string.VPOS, string.WIDTH, string.HEIGHT, string.WC], ['100', '100', '100', '60', '0.91']);
    const space = descendantsNamed(altoRoot, 'SP')[0].attributes;
    assert.deepEqual([space.HPOS, space.WIDTH], ['200', '20']);
    assert.equal(descendantsNamed(altoRoot, 'Page')[0].attributes.PHYSICAL_IMG_NR, '1');
  });

  it('is byte-identical for the same input, and differs only in the documented timestamp lines', () => {
    const first = render(syntheticPage());
    const again = render(syntheticPage());
    assert.equal(first.page, again.page);
    assert.equal(first.alto, again.alto);
    const exportPage = prepareExportPage(syntheticPage());
    const later = { timestamp: new Date('2030-06-07T08:09:10Z') };
    const changed = (a: string, b: string) => a.split('\n').filter((lineText, index) => lineText !== b.split('\n')[index]);
    assert.deepEqual(
      changed(first.page, renderPageXml(exportPage, later)).map((lineText) => lineText.trim().replace(/>.*</, '><')),
      ['<Created></Created>', '<LastChange></LastChange>'],
    );
    assert.ok(changed(first.alto, renderAlto(exportPage, later)).every((lineText) => lineText.includes('<processingDateTime>')));
  });

  it('handles an empty page (no regions)', async () => {
    const { page, alto, text } = render(syntheticPage({ regions: [] }));
    await assertValid('empty', page, alto);
    assert.equal(descendantsNamed(parseXml(page), 'ReadingOrder').length, 0);
    assert.equal(descendantsNamed(parseXml(alto), 'TextBlock').length, 0);
    assert.equal(text, '');
  });

  it('handles pipeline_steps=layout: lines with geometry and no text', async () => {
    const { page, alto, text } = render(layoutOnlyPage());
    await assertValid('layout-only', page, alto);
    assert.deepEqual(pageLines(page), ['', '', '']);
    const strings = descendantsNamed(parseXml(alto), 'String');
    assert.equal(strings.length, 3, 'one empty String per line (ALTO needs one)');
    assert.ok(strings.every((string) => string.attributes.CONTENT === ''));
    assert.equal(text, '');
  });

  it('keeps model words only when they spell the line, else estimates words for ALTO and leaves PAGE at line level', async () => {
    const page = syntheticPage();
    page.regions[0].lines[0].text = 'Grüße und Dank'; // correction changed the text, words are stale
    const { exportPage, page: pageXml, alto } = render(page);
    await assertValid('stale-words', pageXml, alto);
    const lineElement = descendantsNamed(parseXml(pageXml), 'TextLine')[0];
    assert.equal(childrenNamed(lineElement, 'Word').length, 0);
    const estimated = exportPage.regions[0].lines[0];
    assert.equal(estimated.wordsEstimated, true);
    assert.deepEqual(
      estimated.words.map((word) => word.text),
      ['Grüße', 'und', 'Dank'],
    );
    for (const word of estimated.words) {
      assert.ok(word.box.x >= estimated.box.x && word.box.x + word.box.width <= estimated.box.x + estimated.box.width);
    }
    assert.deepEqual(altoLines(alto)[0], 'Grüße und Dank');
  });

  it('makes ids valid and unique, and geometry valid, whatever the model gave', async () => {
    const page = syntheticPage();
    page.regions[0].id = '1 bad id';
    page.regions[1].id = 'l1'; // clashes with a line id
    page.regions[0].lines[1].id = 'l1'; // duplicate
    page.regions[0].lines[1].polygon = [[-20, 5000]]; // one point, outside the image
    page.regions[0].lines[1].baseline = [[3, 4]];
    page.regions[1].polygon = [];
    const { exportPage, page: pageXml, alto } = render(page);
    await assertValid('bad-ids', pageXml, alto);
    const ids = [...pageXml.matchAll(/ id="([^"]+)"/g)].map((match) => match[1]);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(exportPage.regions[0].lines[1].polygon.length >= 3);
    assert.equal(exportPage.regions[0].lines[1].baseline, null);
  });

  it('replaces characters XML cannot carry and line breaks inside a line', async () => {
    const page = syntheticPage();
    page.regions[0].lines = [{ ...page.regions[0].lines[0], text: 'a\u0001b\tc\nd', words: [] }];
    const { page: pageXml, alto, text } = render(page);
    await assertValid('controls', pageXml, alto);
    assert.equal(pageLines(pageXml)[0], 'a\uFFFDb c d');
    assert.equal(text.split('\n')[0], 'a\uFFFDb c d');
  });
});

describe('a page read turned', () => {
  it('says so in PageXML (Page/@orientation, in (-180, 180]) and ALTO (Page/@ROTATION), both schema-valid, with the text in reading order', async () => {
    const upright = syntheticPage();
    const { width, height } = upright.image;
    for (const [turn, pageOrientation] of [
      [180, '180'],
      [90, '90'],
      [270, '-90'],
    ] as const) {
      // the synthetic page is the upright one; the image as sent is turned back from it
      const image = turn === 180 ? upright.image : { ...upright.image, width: height, height: width };
      const turned = syntheticPage({ image, orientation: turn, regions: regionsTurnedBack(upright.regions, turn, width, height) });
      const { page: pageXml, alto } = render(turned);
      await assertValid(`turned-${turn}`, pageXml, alto);
      assert.equal(descendantsNamed(parseXml(pageXml), 'Page')[0].attributes.orientation, pageOrientation);
      assert.equal(descendantsNamed(parseXml(alto), 'Page')[0].attributes.ROTATION, String(turn));
      assert.deepEqual(pageLines(pageXml), pageLines(render(upright).page));
    }
    assert.equal(descendantsNamed(parseXml(render(upright).page), 'Page')[0].attributes.orientation, undefined);
  });

  it('accepts no other orientation in a stored page result', () => {
    assert.throws(() => validatePageResult({ ...syntheticPage(), orientation: 45 }, 1), /\$\.orientation must be 90, 180 or 270/);
  });
});

describe('page result validation', () => {
  it('rejects a malformed page result with page_result_invalid and the bad fields', () => {
    const broken = syntheticPage() as unknown as Record<string, unknown>;
    broken.schema = 'other';
    (broken.image as Record<string, unknown>).width = -3;
    (broken.regions as Array<{ lines: Array<Record<string, unknown>> }>)[0].lines[0].text = 42;
    assert.throws(
      () => validatePageResult(broken, 7),
      (error: Error & { code?: string; pageNumber?: number }) => {
        assert.equal(error.code, 'page_result_invalid');
        assert.equal(error.pageNumber, 7);
        assert.match(error.message, /\$\.schema/);
        assert.match(error.message, /\$\.image\.width/);
        assert.match(error.message, /\$\.regions\[0\]\.lines\[0\]\.text/);
        return true;
      },
    );
    assert.throws(() => validatePageResult(null, 1), { code: 'page_result_invalid' });
  });
});
