// bench/eval-correction.ts against the fake server: the scoring and the report,
// so that `npm run eval -- --correction` does not rot while CI cannot run it. The fake model
// answers from the request alone (it does not know the ground truth), so the evaluation has to
// report what a real correction gives: lines fixed, lines missed, a line made worse.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { evaluateCorrection, formatCorrectionReport, scoringText } from '../../bench/eval-correction.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { buildPage, HOOKER_RECOGNISED, HOOKER_TRUTH, requestLines } from '../support/correction-pages.ts';
import { fakeCorrectLine, fakeCorrector, roughTokens } from '../support/fake-corrector.ts';
import { FakeLlmServer } from '../support/fake-llm-server.ts';

const IMAGE = new URL('../fixtures/correction/hooker_JDH_2_16_144_002.jpg', import.meta.url).pathname;
let server: FakeLlmServer;

before(async () => {
  server = await FakeLlmServer.start();
});
after(() => server.close());

test('the fixture ground truth is the one the hand-built page uses', async () => {
  const lines = (await readFile(new URL('../fixtures/correction/hooker_JDH_2_16_144_002.gt.txt', import.meta.url), 'utf8')).split('\n');
  assert.deepEqual(lines.slice(0, 6), Object.values(HOOKER_TRUTH));
});

test('CER before and after correction, per page and over all pages', async () => {
  // A fake model that does not know the answer (test/support/fake-corrector.ts): it fixes "tho" and
  // "withthe", misses "complicatc", "doinq" and "grasscs", and turns a correct "those" into "these".
  server.handle(fakeCorrector());
  const config = loadConfig({ GEMINI_API_KEY: 'k', GEMINI_BASE_URL: server.geminiBaseUrl }).correction;
  const groundTruth = Object.values(HOOKER_TRUTH);
  const requestsBefore = server.requests.length;
  const result = await evaluateCorrection(
    [{ name: 'hooker_JDH_2_16_144_002', page: buildPage(HOOKER_RECOGNISED), groundTruth, imagePath: IMAGE }],
    { config, llmTier: 'cheap', preset: 'letter', log: createLogger('silent') },
  );
  assert.ok(result);
  const chars = Array.from(scoringText(groundTruth)).length;
  assert.equal(result.rows[0].referenceChars, chars);
  assert.equal(result.rows[0].errorsBefore, 5, 'c→e, q→g, o→e, c→e, and the missing space');
  // Two fixed (o→e in "tho", the space in "withthe"), three missed, one made ("those" → "these").
  assert.equal(result.rows[0].errorsAfter, 4);
  assert.equal(result.cerBefore, 5 / chars);
  assert.equal(result.cerAfter, 4 / chars);
  assert.equal(result.rows[0].changedLines, 3);
  assert.equal(result.rows[0].refusedLines, 0);
  // Usage is what the provider reported for the one call (the fake counts a quarter of the characters).
  assert.equal(server.requests.length, requestsBefore + 1);
  const request = server.requests.at(-1)!;
  const answered = requestLines(request.userText).map((line) => ({ id: line.id, text: fakeCorrectLine(line.text) }));
  const usage = [roughTokens(request.system + request.userText), roughTokens(JSON.stringify({ lines: answered }))];
  assert.deepEqual(
    [result.provider, result.model, result.rows[0].inputTokens, result.rows[0].outputTokens],
    ['gemini', 'gemini-2.5-flash-lite', ...usage],
  );
  const report = formatCorrectionReport(result);
  assert.match(report, /^correction with gemini gemini-2\.5-flash-lite \(tier cheap, preset letter\)/);
  assert.match(report, new RegExp(`hooker_JDH_2_16_144_002 +163 +3\\.07% +2\\.45% +3 +0 +${usage[0]}/${usage[1]}`));
});

test('a caller can score with its own normalisation', async () => {
  server.handle(fakeCorrector());
  const config = loadConfig({ GEMINI_API_KEY: 'k', GEMINI_BASE_URL: server.geminiBaseUrl }).correction;
  const calls: string[][] = [];
  const result = await evaluateCorrection(
    [{ name: 'p', page: buildPage(HOOKER_RECOGNISED), groundTruth: Object.values(HOOKER_TRUTH), imagePath: IMAGE }],
    {
      config,
      log: createLogger('silent'),
      score: (hypothesis, reference) => {
        calls.push(hypothesis);
        return { errors: hypothesis.filter((line, index) => line !== reference[index]).length, length: reference.length };
      },
    },
  );
  assert.equal(calls.length, 2);
  // Lines wrong: before, lines 1-4; after, lines 1-3 (missed words) and 5 ("these"): as many.
  assert.deepEqual([result?.rows[0].errorsBefore, result?.rows[0].errorsAfter, result?.rows[0].referenceChars], [4, 4, 6]);
  assert.deepEqual(
    calls[1].map((line, index) => line === Object.values(HOOKER_TRUTH)[index]),
    [false, false, false, true, false, true],
  );
});

test('without a provider the evaluation is skipped and says why', async () => {
  assert.equal(await evaluateCorrection([], { config: loadConfig({}).correction }), null);
  assert.match(formatCorrectionReport(null), /no correction provider is configured/);
});
