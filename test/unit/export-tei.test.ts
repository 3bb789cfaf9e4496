// The job's TEI P5 file (src/export/tei.ts): page2tei's shape, valid against tei_all.rng, with
// real pages' geometry and text, corrections, empty and layout-only pages and XML specials.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyCorrections, prepareExportPage } from '../../src/export/export-page.ts';
import { renderJobText, renderPlainText } from '../../src/export/plain-text.ts';
import { TeiBuilder } from '../../src/export/tei.ts';
import { validatePageResult } from '../../src/pipeline/page-result-reader.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { fixturePages } from '../support/export-job.ts';
import { layoutOnlyPage, syntheticPage } from '../support/synthetic-pages.ts';
import { descendantsNamed, parseXml, type XmlElement } from '../support/xml-tree.ts';
import { validateAgainstTeiAll } from '../support/tei-schema.ts';

const job = {
  jobId: '2f0c9a52-1111-4222-8333-444455556666',
  createdAt: new Date('2025-01-02T03:04:05.678Z'),
  software: { name: 'hwr', version: '0.1.0' },
};

function exportPage(result: PageResult) {
  return prepareExportPage(validatePageResult(result, result.pageNumber));
}

/** The text after each lb up to the next element, as a reader of the TEI gets a line. */
function lbTexts(xml: string): Array<{ facs: string; text: string; change: string | undefined }> {
  return [...xml.matchAll(/<lb facs="#([^"]+)" n="N\d+"(?: change="([^"]+)")?\/>([^\n]*)\n/g)].map((match) => ({
    facs: match[1],
    change: match[2],
    text: match[3].replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'),
  }));
}

describe('TEI export', () => {
  it('writes real pages as page2tei does, valid against tei_all.rng', async () => {
    const pages = await fixturePages();
    const tei = new TeiBuilder();
    const exported = pages.map((page) => exportPage(page.result));
    exported.forEach((page, index) => tei.addPage(page, { pageNumber: index + 1, name: pages[index].name }));
    const xml = tei.build({ ...job, correctionVersion: 0 });
    assert.deepEqual(await validateAgainstTeiAll([{ fileName: 'job.tei.xml', contents: xml }]), []);

    const root = parseXml(xml);
    const surfaces = descendantsNamed(root, 'surface');
    assert.equal(surfaces.length, pages.length);
    surfaces.forEach((surface, index) => {
      assert.equal(surface.attributes['xml:id'], `facs_${index + 1}`);
      assert.equal(Number(surface.attributes.lrx), exported[index].width);
      assert.equal(Number(surface.attributes.lry), exported[index].height);
    });
    const zones = descendantsNamed(root, 'zone');
    const lineZones = zones.filter((zone: XmlElement) => zone.attributes.rendition === 'Line');
    const lines = exported.flatMap((page) => page.regions.flatMap((region) => region.lines));
    assert.equal(lineZones.length, lines.length, 'one Line zone per line');
    // Each lb points to its line's zone, and the lines read as the text files do.
    const lbs = lbTexts(xml);
    assert.deepEqual(
      lbs.map((lb) => lb.facs),
      lineZones.map((zone) => zone.attributes['xml:id']),
    );
    assert.deepEqual(
      lbs.map((lb) => lb.text).filter((text) => text.trim() !== ''),
      exported.flatMap((page) =>
        renderPlainText(page)
          .split('\n')
          .filter((text) => text !== ''),
      ),
    );
    assert.equal(descendantsNamed(root, 'pb').length, pages.length);
    assert.equal(descendantsNamed(root, 'revisionDesc').length, 0, 'no corrections, no revisionDesc');
  });

  it('writes corrected lines with their correction, pointing to the header change', async () => {
    const page = exportPage(syntheticPage());
    const first = page.regions[0].lines[0];
    const corrected = applyCorrections(page, { [first.id]: 'Ein <besserer> & "richtiger" Text' });
    const tei = new TeiBuilder();
    tei.addPage(corrected, { pageNumber: 1, name: 'a/b/Brief & "Nachtrag" <1>.jpg' });
    const xml = tei.build({ ...job, correctionVersion: 3 });
    assert.deepEqual(await validateAgainstTeiAll([{ fileName: 'corrected.tei.xml', contents: xml }]), []);
    const [lb] = lbTexts(xml);
    assert.equal(lb.text, 'Ein <besserer> & "richtiger" Text');
    assert.equal(lb.change, '#hwr_corrections');
    assert.match(xml, /<change xml:id="hwr_corrections" n="3">1 line corrected by people/);
    assert.match(xml, /<graphic url="a\/b\/Brief%20%26%20%22Nachtrag%22%20%3C1%3E\.jpg"/);
  });

  it('stays valid for empty and layout-only pages', async () => {
    const tei = new TeiBuilder();
    tei.addPage(exportPage(syntheticPage({ regions: [], pageNumber: 1 })), { pageNumber: 1, name: 'leer.jpg' });
    const onlyEmpty = new TeiBuilder();
    onlyEmpty.addPage(exportPage(syntheticPage({ regions: [], pageNumber: 1 })), { pageNumber: 1, name: 'leer.jpg' });
    tei.addPage(exportPage({ ...layoutOnlyPage(), pageNumber: 2 }), { pageNumber: 2, name: 'layout.jpg' });
    const documents = [
      { fileName: 'mixed.tei.xml', contents: tei.build({ ...job, correctionVersion: 0 }) },
      { fileName: 'empty.tei.xml', contents: onlyEmpty.build({ ...job, correctionVersion: 0 }) },
    ];
    assert.deepEqual(await validateAgainstTeiAll(documents), []);
  });

  it('joins the pages of the job text with form feeds', () => {
    assert.equal(renderJobText(['a\nb\n', '', 'c\n']), 'a\nb\n\f\fc\n');
  });
});
