// Gemini correction end to end through the real @google/genai SDK, pointed at a
// local server speaking the generateContent REST wire format.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import sharp from 'sharp';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-blob-store.ts';
import { StorageUnavailableError } from '../../src/blobs/storage-unavailable.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createCorrector } from '../../src/recognition/correction/create-corrector.ts';
import { PRESET_PROMPTS, PRESETS } from '../../src/recognition/correction/presets.ts';
import { ANSWER_SCHEMA, IMAGE_INSTRUCTION } from '../../src/recognition/correction/prompt.ts';
import { MIN_CALL_MS } from '../../src/recognition/correction/retry.ts';
import { allLines, type PageResult } from '../../src/recognition/page/page-result.ts';
import type { LlmTier } from '../../domain/events.ts';
import type { PageCorrector } from '../../src/recognition/correction/corrector.ts';
import { storedPageImage } from '../../src/pipeline/stored-page-image.ts';
import { buildPage, HOOKER_RECOGNISED, HOOKER_TRUTH, jobOptions, requestLines } from '../support/correction-pages.ts';
import { answerLines, answerText, errorReply, FakeLlmServer, type LlmRequest } from '../support/fake-llm-server.ts';
import { startTestS3Server } from '../support/s3-server.ts';

const IMAGE_KEY = 'jobs/test/pages/1.jpg';
let server: FakeLlmServer;
let blobDir: string;
let blobs: FilesystemBlobStore;

before(async () => {
  server = await FakeLlmServer.start();
  blobDir = await mkdtemp(path.join(os.tmpdir(), 'hwr-correction-'));
  blobs = new FilesystemBlobStore(blobDir);
  await blobs.put(IMAGE_KEY, await readFile(new URL('../fixtures/correction/hooker_JDH_2_16_144_002.jpg', import.meta.url)));
});

after(async () => {
  await server.close();
  await rm(blobDir, { recursive: true, force: true });
});

beforeEach(() => {
  server.reset();
  server.handle(correctEverything);
});

function corrector(env: Record<string, string> = {}, baseUrl = server.geminiBaseUrl): PageCorrector {
  const config = loadConfig({
    GEMINI_API_KEY: 'test-key',
    GEMINI_BASE_URL: baseUrl,
    CORRECTION_RETRIES: '2',
    CORRECTION_RETRY_BASE_MS: '5',
    CORRECTION_TIMEOUT_MS: '5000',
    ...env,
  });
  return createCorrector(config.correction);
}

function correct(
  page: PageResult,
  tier: LlmTier = 'balanced',
  preset = 'generic',
  using = corrector(),
  signal = new AbortController().signal,
  deadline?: number,
) {
  return using.correct(page, {
    options: jobOptions(tier, preset),
    pageImage: storedPageImage(blobs, IMAGE_KEY),
    signal,
    log: createLogger('silent'),
    ...(deadline === undefined ? {} : { deadline }),
  });
}

/** The model every test wishes for: each line as in the ground truth. */
function correctEverything(request: LlmRequest) {
  return answerLines(requestLines(request.userText).map((line) => ({ id: line.id, text: HOOKER_TRUTH[line.id] })));
}

function truthWith(changes: Record<string, string>) {
  return answerLines(HOOKER_RECOGNISED.map((line) => ({ id: line.id, text: changes[line.id] ?? HOOKER_TRUTH[line.id] })));
}

const texts = (page: PageResult) => allLines(page).map((line) => line.text);
const recognised = HOOKER_RECOGNISED.map((line) => line.text);
const truth = HOOKER_RECOGNISED.map((line) => HOOKER_TRUTH[line.id]);

test('each tier calls its model with the preset, the answer schema and every line', async () => {
  const expected = { cheap: 'gemini-2.5-flash-lite', balanced: 'gemini-2.5-flash', best: 'gemini-2.5-pro' };
  for (const [tier, preset] of [
    ['cheap', 'letter'],
    ['balanced', 'historical'],
    ['best', 'register'],
  ] as const) {
    server.reset();
    await correct(buildPage(HOOKER_RECOGNISED), tier, preset);
    assert.equal(server.requests.length, 1);
    const [request] = server.requests;
    assert.equal(request.model, expected[tier]);
    assert.match(request.path, new RegExp(`^/v1(beta)?/models/${expected[tier]}:generateContent$`));
    assert.equal(request.headers['x-goog-api-key'], 'test-key');
    assert.ok(request.system.includes(PRESET_PROMPTS[preset]), `${tier}: preset ${preset} is in the instruction`);
    for (const other of PRESETS.filter((name) => name !== preset)) assert.ok(!request.system.includes(PRESET_PROMPTS[other]));
    assert.deepEqual(request.schema, ANSWER_SCHEMA);
    assert.equal(request.body.generationConfig.responseMimeType, 'application/json');
    assert.equal(request.body.generationConfig.temperature, 0);
    assert.deepEqual(
      requestLines(request.userText),
      HOOKER_RECOGNISED.map((line) => ({ id: line.id, confidence: line.confidence, text: line.text })),
    );
    if (tier === 'best') {
      assert.equal(request.image?.mimeType, 'image/jpeg');
      const metadata = await sharp(request.image.data).metadata();
      assert.deepEqual(
        [metadata.format, metadata.width, metadata.height],
        ['jpeg', 1378, 2048],
        'the 1448x2152 scan is fitted into 2048 px',
      );
      assert.ok(request.system.includes(IMAGE_INSTRUCTION));
      assert.equal(request.body.contents[0].parts[0].inlineData.mimeType, 'image/jpeg', 'the image comes before the text');
    } else {
      assert.equal(request.image, null, `${tier} sends no image`);
      assert.ok(!request.system.includes(IMAGE_INSTRUCTION));
    }
  }
});

test('the best tier decodes its page image through the admission it is given (the pixel budget), once', async () => {
  let admitted = 0;
  await corrector().correct(buildPage(HOOKER_RECOGNISED), {
    options: jobOptions('best'),
    pageImage: storedPageImage(blobs, IMAGE_KEY),
    signal: new AbortController().signal,
    log: createLogger('silent'),
    admitDecode: (decode) => {
      admitted += 1;
      return decode();
    },
  });
  assert.equal(admitted, 1);
});

test('the best tier sends no image when GEMINI_BEST_TIER_IMAGE=0', async () => {
  await correct(buildPage(HOOKER_RECOGNISED), 'best', 'generic', corrector({ GEMINI_BEST_TIER_IMAGE: '0' }));
  assert.equal(server.requests[0].image, null);
});

test('good corrections are applied, words re-aligned, and tokens and model recorded', async () => {
  server.handle((request) => ({ ...correctEverything(request), usage: { input: 812, output: 140, thoughts: 60 } }));
  const page = buildPage(HOOKER_RECOGNISED);
  const corrected = await correct(page);
  assert.deepEqual(texts(corrected), truth);
  assert.deepEqual(texts(page), recognised, 'the input page is left as it was');
  assert.deepEqual(corrected.correction, {
    provider: 'gemini',
    model: 'gemini-2.5-flash',
    refusedLines: [],
    inputTokens: 812,
    outputTokens: 200,
    outcome: 'applied',
  });
  assert.deepEqual(corrected.warnings, []);
  const lines = allLines(corrected);
  assert.deepEqual(
    lines.map((line) => line.recognizedText),
    [
      'Stapf will complicatc my work',
      'by what he is doinq with tho',
      'African grasscs -- These come',
      'to hard blows withthe Indian',
      undefined,
      undefined,
    ],
  );
  for (const line of lines)
    assert.deepEqual(
      line.words.map((word) => word.text),
      line.text.split(' '),
    );
  // Same word count: boxes untouched. Split "withthe": its box divided in two.
  assert.deepEqual(
    lines[0].words.map((word) => word.box),
    allLines(page)[0].words.map((word) => word.box),
  );
  const withthe = allLines(page)[3].words[3].box;
  const [withWord, theWord] = lines[3].words.slice(3, 5);
  assert.equal(withWord.box.x, withthe.x);
  assert.equal(theWord.box.x + theWord.box.width, withthe.x + withthe.width);
  assert.ok(withWord.box.x + withWord.box.width <= theWord.box.x);
});

test('an over-correction is refused: the line keeps its recognised text and the page records it', async () => {
  server.handle(() => truthWith({ r1l5: 'and likewise with those of the Cape' }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(allLines(corrected)[4].text, 'as well as with those of');
  assert.equal(allLines(corrected)[4].recognizedText, undefined);
  assert.equal(allLines(corrected)[0].text, HOOKER_TRUTH.r1l1, 'the other lines are corrected');
  assert.deepEqual(corrected.correction?.refusedLines, [{ id: 'r1l5', reason: 'edit ratio 0.51 over 0.3' }]);
  assert.equal(corrected.correction?.outcome, 'applied');
});

test('the edit bound is configurable', async () => {
  server.handle(() => truthWith({ r1l5: 'and likewise with those of the Cape' }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED), 'balanced', 'generic', corrector({ CORRECTION_MAX_EDIT_RATIO: '0.6' }));
  assert.equal(allLines(corrected)[4].text, 'and likewise with those of the Cape');
  assert.deepEqual(corrected.correction?.refusedLines, []);
});

test('a dropped line refuses the answer; the one retry that comes back whole is applied', async () => {
  const dropped = HOOKER_RECOGNISED.filter((line) => line.id !== 'r1l3').map((line) => ({ id: line.id, text: HOOKER_TRUTH[line.id] }));
  server.enqueue(answerLines(dropped, { input: 500, output: 100 }));
  server.handle((request) => ({ ...correctEverything(request), usage: { input: 500, output: 120 } }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  assert.deepEqual(texts(corrected), truth);
  assert.deepEqual(corrected.correction && [corrected.correction.inputTokens, corrected.correction.outputTokens], [1000, 220]);
  assert.deepEqual(corrected.warnings, []);
});

test('duplicated lines twice: the page keeps its recognised text, with a warning', async () => {
  const lines = HOOKER_RECOGNISED.map((line) => ({ id: line.id, text: HOOKER_TRUTH[line.id] }));
  server.handle(() => answerLines([...lines, { id: 'r1l3', text: 'These come' }], { input: 400, output: 90 }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  assert.deepEqual(texts(corrected), recognised);
  assert.ok(allLines(corrected).every((line) => line.recognizedText === undefined));
  assert.deepEqual(corrected.warnings, [
    'correction rejected: the answer repeated line r1l3 (2 answers refused); the recognised text was kept',
  ]);
  assert.deepEqual(corrected.correction, {
    provider: 'gemini',
    model: 'gemini-2.5-flash',
    refusedLines: [],
    inputTokens: 800,
    outputTokens: 180,
    outcome: 'rejected',
  });
});

test('malformed output is retried once, then applied', async () => {
  server.enqueue(answerText('Here is the corrected page: Stapf will complicate my work ...'));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  assert.deepEqual(texts(corrected), truth);
});

test('malformed output twice: the page keeps its recognised text, with a warning', async () => {
  server.enqueue(answerText('not json'), answerText('{"lines":[{"id":"r1l1","text":"Stapf will', 'length'));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  assert.deepEqual(texts(corrected), recognised);
  assert.deepEqual(corrected.warnings, [
    'correction rejected: the answer was cut off at the output token limit (2 answers refused); the recognised text was kept',
  ]);
  assert.equal(corrected.correction?.outcome, 'rejected');
});

test('429 with Retry-After: the next attempt waits as long as asked, then succeeds', async () => {
  server.enqueue(errorReply(429, { 'retry-after': '1' }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  const waited = server.requests[1].receivedAt - server.requests[0].receivedAt;
  assert.ok(waited >= 990, `waited ${waited.toFixed(0)} ms, Retry-After said 1 s (backoff alone would be about 5 ms)`);
  assert.deepEqual(texts(corrected), truth);
  assert.deepEqual(corrected.warnings, []);
});

test('a Retry-After beyond CORRECTION_MAX_RETRY_WAIT_MS ends the retries at once', async () => {
  server.handle(() => errorReply(429, { 'retry-after': '3600' }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 1);
  assert.deepEqual(corrected.warnings, [
    'correction unavailable: gemini answered HTTP 429 (wait too long after 1 attempt); the recognised text was kept',
  ]);
});

test('an outage (5xx throughout) keeps the recognised text, warns, and records the model', async () => {
  server.handle(() => errorReply(503));
  const page = buildPage(HOOKER_RECOGNISED);
  const corrected = await correct(page, 'cheap');
  assert.equal(server.requests.length, 3, 'the first attempt and two retries');
  assert.deepEqual(corrected.regions, page.regions);
  assert.deepEqual(corrected.warnings, [
    'correction unavailable: gemini answered HTTP 503 (retries exhausted after 3 attempts); the recognised text was kept',
  ]);
  assert.deepEqual(corrected.correction, {
    provider: 'gemini',
    model: 'gemini-2.5-flash-lite',
    refusedLines: [],
    inputTokens: 0,
    outputTokens: 0,
    outcome: 'unavailable',
  });
});

test('a 5xx then an answer: the retry succeeds', async () => {
  server.enqueue(errorReply(500), errorReply(502));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 3);
  assert.deepEqual(texts(corrected), truth);
});

test('timeouts are retried, then the page keeps its recognised text', async () => {
  server.handle(() => ({ type: 'hang' }));
  const corrected = await correct(
    buildPage(HOOKER_RECOGNISED),
    'balanced',
    'generic',
    // Long enough that each request arrives whole before its timeout on a loaded machine.
    corrector({ CORRECTION_TIMEOUT_MS: '1000', CORRECTION_RETRIES: '1' }),
  );
  assert.equal(server.requests.length, 2);
  assert.deepEqual(texts(corrected), recognised);
  assert.deepEqual(corrected.warnings, [
    'correction unavailable: no answer within 1000 ms (retries exhausted after 2 attempts); the recognised text was kept',
  ]);
});

test("a provider that does not answer is given up at the page's deadline, not after every retry; the page keeps its text", async () => {
  server.handle(() => ({ type: 'hang' }));
  // Without the deadline: 3 calls of CORRECTION_TIMEOUT_MS (5 s) each. With it, 3 s from now:
  // time for one call (at least MIN_CALL_MS left when it starts, however late a loaded machine
  // starts it), and less than one call's own timeout.
  const callTimeoutMs = 5_000;
  const setAt = Date.now();
  const deadline = setAt + 3_000;
  const corrected = await correct(buildPage(HOOKER_RECOGNISED), 'balanced', 'generic', corrector(), undefined, deadline);
  const endedAt = Date.now();
  assert.equal(server.requests.length, 1, 'one call, no retry');
  // Given up at the deadline (not before: the provider never answers), and not a call's timeout later.
  assert.ok(endedAt >= deadline - 10, `gave up ${deadline - endedAt} ms before the deadline`);
  assert.ok(endedAt < deadline + callTimeoutMs, `gave up ${endedAt - deadline} ms after the deadline`);
  assert.deepEqual(texts(corrected), recognised);
  assert.equal(corrected.correction?.outcome, 'unavailable');
  assert.equal(corrected.warnings.length, 1);
  const waited = /^correction unavailable: no answer within (\d+) ms \(out of time after 1 attempt\); the recognised text was kept$/.exec(
    corrected.warnings[0],
  );
  assert.ok(waited, corrected.warnings[0]);
  // The call waited what was left before the deadline when it started: at most the 3 s, at least MIN_CALL_MS.
  const waitedMs = Number(waited[1]);
  assert.ok(waitedMs >= MIN_CALL_MS && waitedMs <= deadline - setAt, `no answer within ${waitedMs} ms`);
});

test('a bad request (400) is not retried', async () => {
  server.handle(() => errorReply(400));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 1);
  assert.deepEqual(corrected.warnings, [
    'correction unavailable: gemini answered HTTP 400 (not retryable after 1 attempt); the recognised text was kept',
  ]);
});

test('an unreachable server is an outage, not a failure', async () => {
  const closed = await FakeLlmServer.start();
  const url = closed.geminiBaseUrl;
  await closed.close();
  const corrected = await correct(buildPage(HOOKER_RECOGNISED), 'balanced', 'generic', corrector({ CORRECTION_RETRIES: '1' }, url));
  assert.deepEqual(texts(corrected), recognised);
  assert.equal(corrected.warnings.length, 1);
  assert.match(
    corrected.warnings[0],
    /^correction unavailable: gemini request failed: .+ \(retries exhausted after 2 attempts\); the recognised text was kept$/,
  );
});

test('cancelling the job aborts a waiting call and rejects with the reason', async () => {
  const controller = new AbortController();
  // Cancelled once the call is there and waiting (a fixed delay raced the request on a loaded machine).
  server.handle(() => {
    setImmediate(() => controller.abort(new Error('job cancelled')));
    return { type: 'hang' };
  });
  const pending = correct(buildPage(HOOKER_RECOGNISED), 'balanced', 'generic', corrector(), controller.signal);
  await assert.rejects(pending, { message: 'job cancelled' });
  assert.equal(server.requests.length, 1);
});

test('a page without lines makes no call', async () => {
  const empty = buildPage([]);
  const corrected = await correct(empty);
  assert.equal(server.requests.length, 0);
  assert.equal(corrected, empty);
});

test('the SDK takes nothing from the environment: GOOGLE_GENAI_USE_VERTEXAI and GOOGLE_GEMINI_BASE_URL are ignored', async () => {
  const saved = { ...process.env };
  process.env.GOOGLE_GENAI_USE_VERTEXAI = 'true';
  process.env.GOOGLE_GEMINI_BASE_URL = 'http://127.0.0.1:9';
  try {
    const corrected = await correct(buildPage(HOOKER_RECOGNISED));
    assert.equal(server.requests.length, 1);
    assert.deepEqual(texts(corrected), truth);
  } finally {
    process.env = saved;
  }
});

test('an unreadable page image: the best tier corrects from the text alone', async () => {
  await blobs.put('jobs/test/pages/broken.jpg', Buffer.from('not an image'));
  for (const key of ['jobs/test/pages/missing.jpg', 'jobs/test/pages/broken.jpg']) {
    server.reset();
    const corrected = await corrector().correct(buildPage(HOOKER_RECOGNISED), {
      options: jobOptions('best'),
      pageImage: storedPageImage(blobs, key),
      signal: new AbortController().signal,
      log: createLogger('silent'),
    });
    assert.equal(server.requests[0].image, null, key);
    assert.ok(!server.requests[0].system.includes(IMAGE_INSTRUCTION));
    assert.deepEqual(texts(corrected), truth);
  }
});

test('the page image in an object store that is away: the best tier does not correct blind, the page task rides it out', async () => {
  const s3 = await startTestS3Server();
  const bucket = new S3BlobStore({ ...s3.settings('away'), tempDir: path.join(os.tmpdir(), 'hwr-correction-s3') });
  try {
    await bucket.put(
      'jobs/test/pages/1.jpg',
      await readFile(path.join(import.meta.dirname, '../fixtures/pages/copiste_wikitexte_0219_2.jpg')),
    );
    await s3.pause();
    server.reset();
    await assert.rejects(
      corrector().correct(buildPage(HOOKER_RECOGNISED), {
        options: jobOptions('best'),
        pageImage: storedPageImage(bucket, 'jobs/test/pages/1.jpg'),
        signal: new AbortController().signal,
        log: createLogger('silent'),
      }),
      StorageUnavailableError,
    );
    assert.equal(server.requests.length, 0, 'no call made without the image');
  } finally {
    bucket.close();
    await s3.stop();
  }
});
