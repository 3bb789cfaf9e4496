// The rules a ground-truth line must pass to be trained on (src/intake/ground-truth-text.ts), and
// how intake tells a PageXML or ALTO file from other XML and finds the image it names.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { sniffLayout } from '../../src/intake/ground-truth-zip.ts';
import { codePointName, normaliseLineText, tooSmallToRead } from '../../src/intake/ground-truth-text.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');

describe('line text', () => {
  test('NFC, white space of every kind as one space, trimmed', () => {
    assert.equal(normaliseLineText('  Cafe\u0301\tau\u00a0lait\n ').text, 'Café au lait');
    assert.equal(normaliseLineText('a\u2003\u2003b\u3000c\u0085d').text, 'a b c d');
    assert.deepEqual(normaliseLineText('Berliniſche Monatsſchrift.'), {
      text: 'Berliniſche Monatsſchrift.',
      invisible: [],
      unlearnable: [],
      privateUse: [],
    });
  });

  test('invisible formatting characters (soft hyphen, zero-width space, direction marks, BOM) are removed and said', () => {
    const line = normaliseLineText('\ufeffver\u00adbunden\u200b und\u200e fort');
    assert.equal(line.text, 'verbunden und fort');
    assert.deepEqual(line.invisible.map(codePointName), ['U+00AD', 'U+200B', 'U+200E']);
    assert.deepEqual(line.unlearnable, []);
  });

  test('unlearnable: control characters, unassigned code points, lone surrogates, U+FFFD', () => {
    assert.deepEqual(normaliseLineText('bell\u0007 and \u0378 and \ud800 and \ufffd').unlearnable.map(codePointName), [
      'U+0007',
      'U+0378',
      'U+D800',
      'U+FFFD',
    ]);
    // Tabs and line breaks are white space, not control characters to refuse.
    assert.deepEqual(normaliseLineText('a\tb\r\nc').unlearnable, []);
  });

  test('private-use characters (MUFI) are learned as they are, and said', () => {
    const line = normaliseLineText('d\ue8e5 ꝛ');
    assert.equal(line.text, 'd\ue8e5 ꝛ');
    assert.deepEqual(line.unlearnable, []);
    assert.deepEqual(line.privateUse.map(codePointName), ['U+E8E5']);
  });

  test('only spaces is no text', () => {
    assert.equal(normaliseLineText(' \u00a0\u200b ').text, '');
  });
});

describe('line size', () => {
  const box = (width: number, height: number) =>
    [
      [10, 10],
      [10 + width, 10],
      [10 + width, 10 + height],
      [10, 10 + height],
    ] as const;

  test('a side under 8 px cannot be read', () => {
    assert.match(tooSmallToRead(box(400, 7), 'word') ?? '', /under 8 px/);
    assert.match(tooSmallToRead(box(7, 40), 'w') ?? '', /under 8 px/);
    assert.equal(tooSmallToRead(box(400, 40), 'a line of text'), null);
  });

  test('a line narrower than its text can be written in (one recognizer frame per character) cannot be read', () => {
    // 40 px high: 16 frames per line height, so at most 2.5 × 16 = 40 characters in 100 px.
    assert.equal(tooSmallToRead(box(100, 40), 'x'.repeat(40)), null);
    assert.match(tooSmallToRead(box(100, 40), 'x'.repeat(41)) ?? '', /41 characters in 100 px of a 40 px high line/);
  });
});

describe('telling layouts from other XML', () => {
  test('real exports: Transkribus PageXML 2013, eScriptorium ALTO v4, OCR-D PageXML 2019, each with the image it names', () => {
    const head = (file: string) => readFileSync(path.join(FIXTURES, file), 'utf8');
    assert.deepEqual(sniffLayout(head('models/hooker_JDH_2_3_6_79_001.xml')), { kind: 'PageXML', imageName: 'JDH_2_3_6_79_001.jpg' });
    assert.deepEqual(sniffLayout(head('export/cremma19_zola_f207.xml')), { kind: 'ALTO', imageName: 'f207.jpeg' });
    assert.deepEqual(sniffLayout(head('export/ocrd_kant_aufklaerung_1784_0017.xml')), {
      kind: 'PageXML',
      imageName: 'OCR-D-IMG/INPUT_0017.tif',
    });
  });

  test('a prefixed namespace, comments before the root, entities in the name; METS and other XML are not layouts', () => {
    assert.deepEqual(
      sniffLayout(
        '<?xml version="1.0"?>\n<!-- <PcGts> in a comment -->\n<pc:PcGts xmlns:pc="x"><pc:Metadata/><pc:Page imageFilename="a&amp;b.jpg" imageWidth="1"/></pc:PcGts>',
      ),
      { kind: 'PageXML', imageName: 'a&b.jpg' },
    );
    assert.deepEqual(sniffLayout('<alto xmlns="http://www.loc.gov/standards/alto/ns-v2#"><Description/></alto>'), {
      kind: 'ALTO',
      imageName: null,
    });
    assert.deepEqual(sniffLayout('<?xml version="1.0"?><mets:mets xmlns:mets="http://www.loc.gov/METS/"><mets:fileSec/></mets:mets>'), {
      kind: null,
      imageName: null,
    });
    assert.deepEqual(sniffLayout('<trpDocMetadata><docId>1</docId></trpDocMetadata>'), { kind: null, imageName: null });
  });
});
