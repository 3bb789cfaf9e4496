import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ctcAlignment, ctcLogLikelihood, type LineFrames, textLabels } from '../../src/recognition/decoding/ctc-score.ts';
import type { CharacterClasses } from '../../src/recognition/models/charset.ts';
import { checkLineEvidence, checkPageEvidence, droppedCharacters, lineEvidence } from '../../src/recognition/correction/line-evidence.ts';
import { EVIDENCE_GUARD } from '../../src/recognition/correction/settings.ts';

// Real line logits of a val page (train/ctc_fixture.ts) with PyTorch's ctc_loss of each text (train/ctc_reference.py).
const fixture = JSON.parse(readFileSync(new URL('../fixtures/ctc-score/lines.json', import.meta.url), 'utf8')) as {
  classes: Pick<CharacterClasses, 'symbols' | 'blank' | 'space'>;
  lines: { id: string; steps: number; logits: string; texts: string[]; torch: number[] }[];
};
const classes: CharacterClasses = { ...fixture.classes, allowed: null };
const framesOf = (line: (typeof fixture.lines)[number]): LineFrames => {
  const bytes = Buffer.from(line.logits, 'base64');
  return { scores: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4), steps: line.steps, logits: true, classes };
};

/** A recognizer of "a", "b" and the blank, and its frames of probabilities, one row a frame. */
const AB: CharacterClasses = { symbols: ['', 'a', 'b'], blank: 0, space: -1, allowed: null };
const probabilityFrames = (rows: readonly (readonly number[])[]): LineFrames => ({
  scores: Float32Array.from(rows.flat()),
  steps: rows.length,
  logits: false,
  classes: AB,
});
/** Frames that read "a", a blank, "b" twice, a blank. */
const A_BLANK_B_B_BLANK = [
  [0.1, 0.8, 0.1],
  [0.8, 0.1, 0.1],
  [0.1, 0.1, 0.8],
  [0.2, 0.1, 0.7],
  [0.8, 0.1, 0.1],
];

test("the CTC log-likelihood of real line logits equals PyTorch's ctc_loss for every text", () => {
  let compared = 0;
  for (const line of fixture.lines) {
    const frames = framesOf(line);
    line.texts.forEach((text, index) => {
      const ours = ctcLogLikelihood(frames, text).logLikelihood;
      assert.ok(
        Math.abs(ours - line.torch[index]) < 1e-3 * Math.max(1, Math.abs(line.torch[index])),
        `${line.id} "${text}": ${ours} vs ${line.torch[index]}`,
      );
      compared += 1;
    });
  }
  assert.equal(compared, 15);
});

test('the image judges: the recognised and true texts are likely, one cut short or padded is not', () => {
  for (const line of fixture.lines) {
    const [recognised, truth, , short, padded] = line.texts;
    const frames = framesOf(line);
    assert.ok(checkLineEvidence({ text: recognised, confidence: 0.9 }, truth, frames, EVIDENCE_GUARD).accept || recognised === truth);
    for (const wrong of [short, padded]) {
      const verdict = checkLineEvidence({ text: recognised, confidence: 0.9 }, wrong, frames, EVIDENCE_GUARD);
      assert.equal(verdict.accept, false, `${line.id}: "${wrong}"`);
      assert.match(
        verdict.accept ? '' : verdict.reason,
        /^(image likelihood lost \d+\.\d\d per character|recognised ink of \d+\.\d left unexplained in a row, over 10$)/,
      );
    }
    assert.ok(lineEvidence(frames, recognised, padded).lossPerChar > 1);
  }
});

test('labels: longest symbol first, spaces dropped for a recognizer without a space class, unknown characters as wildcards', () => {
  const tiny: CharacterClasses = { symbols: ['', 'a', 'b', 'ab', ' '], blank: 0, space: 4, allowed: null };
  assert.deepEqual(textLabels('ab a', tiny), { labels: [3, 4, 1], unknown: 0 });
  assert.deepEqual(textLabels('a\u00e9', tiny), { labels: [1, -1], unknown: 1 });
  const spaceless: CharacterClasses = { symbols: ['', 'a', 'b'], blank: 0, space: -1, allowed: null };
  assert.deepEqual(textLabels('a b', spaceless), { labels: [1, 2], unknown: 0 });
});

test('probabilities and a repeated label: the forward sums every path, and a text the frames cannot hold is impossible', () => {
  const tiny: CharacterClasses = { symbols: ['', 'a'], blank: 0, space: -1, allowed: null };
  // two frames, P(blank) = 0.4, P(a) = 0.6 in each
  const frames: LineFrames = { scores: Float32Array.from([0.4, 0.6, 0.4, 0.6]), steps: 2, logits: false, classes: tiny };
  // "a": a-a, a-blank, blank-a
  assert.ok(Math.abs(ctcLogLikelihood(frames, 'a').logLikelihood - Math.log(0.36 + 0.24 + 0.24)) < 1e-6);
  // "aa" needs a blank between: three frames at least
  assert.equal(ctcLogLikelihood(frames, 'aa').logLikelihood, Number.NEGATIVE_INFINITY);
  assert.ok(Math.abs(ctcLogLikelihood(frames, '').logLikelihood - Math.log(0.16)) < 1e-6);
});

test('a line without frames is judged by the edit ratio; a one-character change always passes', () => {
  const settings = { ...EVIDENCE_GUARD, framelessMaxEditRatio: 0.1 };
  assert.deepEqual(checkLineEvidence({ text: 'tbe cat', confidence: 0.9 }, 'the cat', undefined, settings), { accept: true });
  const verdict = checkLineEvidence({ text: 'the cat sat', confidence: 0.9 }, 'a dog stood', undefined, settings);
  assert.equal(verdict.accept, false);
  assert.match(verdict.accept ? '' : verdict.reason, /no image evidence for the line/);
});

test('the likeliest path: each label on its own frames, in order, and the same path for the same text', () => {
  const frames = probabilityFrames(A_BLANK_B_B_BLANK);
  assert.deepEqual(Array.from(ctcAlignment(frames, 'ab')?.path ?? []), [0, -1, 1, 1, -1]);
  // "a" alone leaves b's frames to blanks: one character dropped
  assert.deepEqual(Array.from(ctcAlignment(frames, 'a')?.path ?? []), [0, -1, -1, -1, -1]);
  // b's ink: ln(0.8 / 0.1) + ln(0.7 / 0.2) over its two frames
  const cut = droppedCharacters(frames, 'ab', 'a');
  assert.deepEqual({ dropped: cut.dropped, longestRun: cut.longestRun }, { dropped: 1, longestRun: 1 });
  assert.ok(Math.abs(cut.droppedInk - (Math.log(8) + Math.log(3.5))) < 1e-6, String(cut.droppedInk));
  assert.deepEqual(droppedCharacters(frames, 'ab', 'ab'), { dropped: 0, longestRun: 0, droppedInk: 0 });
  // six labels cannot fit five frames
  assert.equal(ctcAlignment(frames, 'aaaaaa'), null);
});

test('real lines: the true text leaves no run of recognised characters unexplained, the text cut short leaves its end', () => {
  for (const line of fixture.lines) {
    const [recognised, truth, , short] = line.texts;
    const frames = framesOf(line);
    assert.deepEqual(droppedCharacters(frames, recognised, recognised), { dropped: 0, longestRun: 0, droppedInk: 0 });
    assert.ok(droppedCharacters(frames, recognised, truth).longestRun <= EVIDENCE_GUARD.maxDroppedRun, `${line.id}: "${truth}"`);
    const cut = droppedCharacters(frames, recognised, short);
    // the path of the shorter text may stretch its last characters over the cut-off ink: the run is shorter than the cut
    assert.ok(cut.dropped >= Array.from(recognised).length - Array.from(short).length - 2, `${line.id}: "${short}" ${JSON.stringify(cut)}`);
    assert.ok(
      cut.longestRun > EVIDENCE_GUARD.maxDroppedRun || cut.droppedInk > EVIDENCE_GUARD.maxDroppedInk,
      `${line.id}: "${short}" ${JSON.stringify(cut)}`,
    );
    assert.ok(cut.droppedInk > EVIDENCE_GUARD.maxDroppedInk, `${line.id}: "${short}" ${JSON.stringify(cut)}`);
  }
});

test('a page the image supports: a line over the bounds is judged by the looser ones; on a page it contradicts, not', () => {
  // each line: three frames reading "a" clearly, then two that read "b" but could be "a"
  const frames = probabilityFrames([
    [0.05, 0.9, 0.05],
    [0.9, 0.05, 0.05],
    [0.05, 0.9, 0.05],
    [0.1, 0.3, 0.6],
    [0.1, 0.3, 0.6],
  ]);
  const lines = ['l1', 'l2', 'l3'].map((id) => ({ id, text: 'aab', confidence: 0.9 }));
  const frameMap = new Map(lines.map((line) => [line.id, frames]));
  // against "aab": "aa" and "ab" lose 0.78 and 0.82 nats a character, "aaa" 1.04, "bbb" 2.73
  const settings = {
    ...EVIDENCE_GUARD,
    maxLossPerChar: 0.9,
    confidenceSlack: 0,
    maxLossPerEdit: Number.POSITIVE_INFINITY,
    supportedPage: { minShare: 0.6, maxLossPerChar: 2, confidenceSlack: 0, maxLossPerEdit: Number.POSITIVE_INFINITY, maxDroppedInk: 10 },
  };
  assert.ok(Math.abs(lineEvidence(frames, 'aab', 'aaa').lossPerChar - 1.036) < 1e-3);
  // two lines the bounds accept, one over them
  const supported = checkPageEvidence(
    lines,
    new Map([
      ['l1', 'aa'],
      ['l2', 'ab'],
      ['l3', 'aaa'],
    ]),
    frameMap,
    settings,
  );
  assert.deepEqual(
    [...supported.values()].map((verdict) => verdict.accept),
    [true, true, true],
  );
  // one line of three passes: the page is not supported, the line over the bounds is refused
  const contradicted = checkPageEvidence(
    lines,
    new Map([
      ['l1', 'aa'],
      ['l2', 'bbb'],
      ['l3', 'aaa'],
    ]),
    frameMap,
    settings,
  );
  assert.deepEqual(
    [...contradicted.values()].map((verdict) => verdict.accept),
    [true, false, false],
  );
  const refused = contradicted.get('l3');
  assert.match(refused?.accept === false ? refused.reason : '', /^image likelihood lost \d+\.\d\d per character, over \d+\.\d\d$/);
  // the looser bounds have their limit too
  const tight = { ...settings, supportedPage: { ...settings.supportedPage, maxLossPerChar: 1 } };
  const over = checkPageEvidence(
    lines,
    new Map([
      ['l1', 'aa'],
      ['l2', 'ab'],
      ['l3', 'aaa'],
    ]),
    frameMap,
    tight,
  ).get('l3');
  assert.match(over?.accept === false ? over.reason : '', /over the bounds of a page the image supports \(2 of its 3 lines pass\)/);
});

test('a page the image supports has its own bound on dropped ink: a line the ink bound refused is judged again by it', () => {
  const frames = probabilityFrames(A_BLANK_B_B_BLANK);
  const lines = ['l1', 'l2', 'l3'].map((id) => ({ id, text: 'ab', confidence: 0.9 }));
  const frameMap = new Map(lines.map((line) => [line.id, frames]));
  // "a" leaves b's ink (3.33) unexplained and loses 3.53 nats a character; "aba" and "aab" drop nothing
  const proposed = new Map([
    ['l1', 'a'],
    ['l2', 'aba'],
    ['l3', 'aab'],
  ]);
  const line = { ...EVIDENCE_GUARD, maxLossPerChar: 4, confidenceSlack: 0, maxLossPerEdit: Number.POSITIVE_INFINITY, maxDroppedInk: 3 };
  const bounds = { minShare: 0.6, maxLossPerChar: 4, confidenceSlack: 0, maxLossPerEdit: Number.POSITIVE_INFINITY };
  // the ink bound refuses l1; two of three pass: the page is supported, and its own ink bound lets l1 through
  const own = checkPageEvidence(lines, proposed, frameMap, { ...line, supportedPage: { ...bounds, maxDroppedInk: 10 } });
  assert.deepEqual(
    [...own.values()].map((verdict) => verdict.accept),
    [true, true, true],
  );
  const same = checkPageEvidence(lines, proposed, frameMap, { ...line, supportedPage: { ...bounds, maxDroppedInk: 3 } });
  assert.deepEqual(
    [...same.values()].map((verdict) => verdict.accept),
    [false, true, true],
  );
  const refused = same.get('l1');
  assert.match(
    refused?.accept === false ? refused.reason : '',
    /^recognised ink of 3\.3 left unexplained in a row, over 3, and over the bounds of a page the image supports \(2 of its 3 lines pass\)$/,
  );
  // a page with no line within the line bounds is not supported: its ink bound is not asked
  const alone = checkPageEvidence(lines.slice(0, 1), new Map([['l1', 'a']]), frameMap, {
    ...line,
    supportedPage: { ...bounds, maxDroppedInk: 10 },
  });
  assert.equal(alone.get('l1')?.accept, false);
});
