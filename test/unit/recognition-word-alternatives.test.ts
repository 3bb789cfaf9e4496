// Word alternatives: the beam search's runners-up, laid over the best reading word by word, with
// confidences calibrated from the word's own; written in PageXML (TextEquiv index/conf) and ALTO
// (ALTERNATIVE), both valid against the official schemas.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderAlto } from '../../src/export/alto.ts';
import { applyCorrections, prepareExportPage } from '../../src/export/export-page.ts';
import { renderPageXml } from '../../src/export/pagexml.ts';
import { validatePageResult } from '../../src/pipeline/page-result-reader.ts';
import { beamSearchCtc, beamSearchCtcReadings } from '../../src/recognition/decoding/ctc-beam-search.ts';
import type { PatchFrame } from '../../src/recognition/image/raster.ts';
import { characterClasses, type CharacterClasses } from '../../src/recognition/models/charset.ts';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import type { PlacedCharacter } from '../../src/recognition/reading/text-recognizer.ts';
import { wordAlternatives } from '../../src/recognition/reading/word-alternatives.ts';
import { wordsOf } from '../../src/recognition/reading/words.ts';
import { syntheticPage } from '../support/synthetic-pages.ts';
import { childrenNamed, descendantsNamed, parseXml } from '../support/xml-tree.ts';
import { validateAgainstSchema } from '../support/xsd.ts';

function classesOf(chars: string): CharacterClasses {
  return characterClasses(`${[...chars].join('\n')}\n`, { appendSpace: false, blankIndex: 0 });
}

function probabilities(classes: CharacterClasses, frames: Record<string, number>[]): Float32Array {
  const count = classes.symbols.length;
  const data = new Float32Array(frames.length * count);
  frames.forEach((frame, t) => {
    let rest = 1;
    for (const [char, p] of Object.entries(frame)) {
      data[t * count + classes.symbols.indexOf(char)] = p;
      rest -= p;
    }
    data[t * count + classes.blank] = rest;
  });
  return data;
}

const text = (characters: readonly { text: string }[]): string => characters.map((c) => c.text).join('');

test('the beam search keeps its runners-up with their shares, and its best reading is the one beamSearchCtc gives', () => {
  const classes = classesOf('cateo ');
  const count = classes.symbols.length;
  // "cat" or "cot" (the middle letter unsure), a space, then "to"
  const scores = probabilities(classes, [{ c: 0.95 }, {}, { a: 0.55, o: 0.4 }, {}, { t: 0.95 }, { ' ': 0.9 }, { t: 0.95 }, {}, { o: 0.9 }]);
  const readings = beamSearchCtcReadings(scores, 0, count, 9, classes, false, null, undefined, null, 5);
  assert.equal(text(readings.characters), 'cat to');
  assert.equal(text(readings.characters), text(beamSearchCtc(scores, 0, count, 9, classes, false, null)));
  assert.ok(readings.share > 0.4 && readings.share < 0.7, `best share ${readings.share}`);
  assert.ok(readings.runnersUp.length > 0 && readings.runnersUp.length <= 5);
  assert.equal(text(readings.runnersUp[0].characters), 'cot to');
  const total = readings.share + readings.runnersUp.reduce((sum, other) => sum + other.share, 0);
  assert.ok(total <= 1 + 1e-9);
  for (let i = 1; i < readings.runnersUp.length; i += 1) assert.ok(readings.runnersUp[i - 1].share >= readings.runnersUp[i].share);
  assert.deepEqual(beamSearchCtcReadings(scores, 0, count, 9, classes, false, null).runnersUp, []);
});

const placed = (spec: string, confidence = 0.9): PlacedCharacter[] =>
  [...spec].map((char, index) => ({ text: char, start: index * 10, end: index * 10 + 8, confidence }));

test('a word gets the other readings of its span, summed per text, best first, at most 3, their confidences sharing 1 - its own', () => {
  const best = placed('cat sat');
  const competing = {
    share: 0.5,
    runnersUp: [
      { characters: placed('cot sat'), share: 0.2 },
      { characters: placed('cut sat'), share: 0.1 },
      { characters: placed('cot sal'), share: 0.1 },
      { characters: placed('eat sat'), share: 0.05 },
      { characters: placed('oat sat'), share: 0.04 },
      { characters: placed('cat sad'), share: 0.001 },
    ],
  };
  const frame: PatchFrame = { origin: [0, 0], ux: [1, 0], uy: [0, 1] };
  const words = wordsOf(best, frame, 70, 20, competing);
  assert.deepEqual(
    words.map((word) => word.text),
    ['cat', 'sat'],
  );
  const [cat, sat] = words;
  // p(cat) = 0.5 + 0.001; the rest (0.499) shared: cot 0.3, cut 0.1, eat 0.05 (oat 0.04 is fourth)
  assert.deepEqual(
    cat.alternatives?.map((alternative) => alternative.text),
    ['cot', 'cut', 'eat'],
  );
  const outside = 1 - 0.501;
  assert.equal(cat.alternatives?.[0].confidence, Math.round(((0.1 * 0.3) / outside) * 10000) / 10000);
  assert.ok((cat.alternatives ?? []).reduce((sum, alternative) => sum + alternative.confidence, 0) <= 1 - cat.confidence + 1e-9);
  // sat: sal (0.1) and sad (0.001, under the noise floor)
  assert.deepEqual(
    sat.alternatives?.map((alternative) => alternative.text),
    ['sal'],
  );
  // a word every reading agrees on has none
  assert.deepEqual(wordAlternatives({ start: 0, end: 30 }, 'cat', 0.9, { share: 1, runnersUp: [] }), []);
});

function pageWithAlternatives(): PageResult {
  const page = syntheticPage();
  const word = page.regions[0].lines[0].words[0];
  word.alternatives = [
    { text: 'Grüfse', confidence: 0.041 },
    { text: 'Gruße & "x" <y>', confidence: 0.02 },
    { text: word.text, confidence: 0.01 },
  ];
  page.regions[0].lines[1].words[1].alternatives = [{ text: 'cafe', confidence: 0.3 }];
  return page;
}

test('PageXML writes alternatives as further TextEquivs (index, conf) and ALTO as ALTERNATIVEs, both schema-valid', async () => {
  const exportPage = prepareExportPage(validatePageResult(pageWithAlternatives(), 1));
  const timestamp = new Date('2025-01-02T03:04:05.678Z');
  const page = renderPageXml(exportPage, { timestamp });
  const alto = renderAlto(exportPage, { timestamp });
  assert.deepEqual(await validateAgainstSchema('page', [{ fileName: 'alternatives.page.xml', contents: page }]), []);
  assert.deepEqual(await validateAgainstSchema('alto', [{ fileName: 'alternatives.alto.xml', contents: alto }]), []);

  const word = descendantsNamed(parseXml(page), 'Word')[0];
  const equivs = childrenNamed(word, 'TextEquiv');
  assert.deepEqual(
    equivs.map((equiv) => [equiv.attributes.index, equiv.attributes.conf, childrenNamed(equiv, 'Unicode')[0].text]),
    [
      ['0', '0.91', 'Grüße'],
      ['1', '0.041', 'Grüfse'],
      ['2', '0.02', 'Gruße & "x" <y>'],
    ],
  );
  const string = descendantsNamed(parseXml(alto), 'String')[0];
  assert.deepEqual(
    childrenNamed(string, 'ALTERNATIVE').map((alternative) => [alternative.text, alternative.attributes.PURPOSE]),
    [
      ['Grüfse', 'recognition confidence=0.041'],
      ['Gruße & "x" <y>', 'recognition confidence=0.02'],
    ],
  );
  // a word without alternatives is written as before
  assert.equal(childrenNamed(descendantsNamed(parseXml(page), 'Word')[1], 'TextEquiv')[0].attributes.index, undefined);

  // a line a person corrected keeps its words without the machine's alternatives
  const corrected = applyCorrections(exportPage, { l2: "Tom's cafe — naïve façade" });
  assert.equal(corrected.regions[0].lines[1].words[1].alternatives, undefined);
  const kept = applyCorrections(exportPage, { l2: "Tom's  café — naïve façade" });
  assert.equal(kept.regions[0].lines[1].words[1].text, 'café');
  assert.ok(kept.regions[0].lines[1].words.every((w) => w.alternatives === undefined));
});

test('a page result with malformed alternatives is refused', () => {
  const page = pageWithAlternatives();
  (page.regions[0].lines[0].words[0] as { alternatives: unknown }).alternatives = [{ text: 3 }];
  assert.throws(() => validatePageResult(page, 1), /alternatives\[0\]\.text/);
});
