// Self-hosted (OpenAI-compatible) correction end to end through the real `openai`
// SDK, pointed at a local server speaking the chat-completions wire format.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import sharp from 'sharp';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createCorrector } from '../../src/recognition/correction/create-corrector.ts';
import { PRESET_PROMPTS } from '../../src/recognition/correction/presets.ts';
import { ANSWER_SCHEMA } from '../../src/recognition/correction/prompt.ts';
import { allLines, type PageResult } from '../../src/recognition/page/page-result.ts';
import type { LlmTier } from '../../domain/events.ts';
import type { PageCorrector } from '../../src/recognition/correction/corrector.ts';
import { storedPageImage } from '../../src/pipeline/stored-page-image.ts';
import { buildPage, HOOKER_RECOGNISED, HOOKER_TRUTH, jobOptions, requestLines } from '../support/correction-pages.ts';
import { answerLines, answerText, errorReply, FakeLlmServer, type LlmRequest } from '../support/fake-llm-server.ts';

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

function corrector(env: Record<string, string> = {}): PageCorrector {
  const config = loadConfig({
    OPENAI_BASE_URL: server.openaiBaseUrl,
    OPENAI_MODEL: 'qwen2.5-7b-instruct',
    OPENAI_MODEL_BEST: 'qwen2.5-vl-72b-instruct',
    CORRECTION_RETRIES: '2',
    CORRECTION_RETRY_BASE_MS: '5',
    ...env,
  });
  return createCorrector(config.correction);
}

function correct(page: PageResult, tier: LlmTier = 'balanced', preset = 'generic', using = corrector()) {
  return using.correct(page, {
    options: jobOptions(tier, preset),
    pageImage: storedPageImage(blobs, IMAGE_KEY),
    signal: new AbortController().signal,
    log: createLogger('silent'),
  });
}

function correctEverything(request: LlmRequest) {
  return answerLines(requestLines(request.userText).map((line) => ({ id: line.id, text: HOOKER_TRUTH[line.id] })));
}

const texts = (page: PageResult) => allLines(page).map((line) => line.text);
const recognised = HOOKER_RECOGNISED.map((line) => line.text);
const truth = HOOKER_RECOGNISED.map((line) => HOOKER_TRUTH[line.id]);

test('each tier calls its configured model with the preset, a strict JSON schema and every line', async () => {
  const expected = { cheap: 'qwen2.5-7b-instruct', balanced: 'qwen2.5-7b-instruct', best: 'qwen2.5-vl-72b-instruct' };
  for (const [tier, preset] of [
    ['cheap', 'diary'],
    ['balanced', 'form'],
    ['best', 'historical'],
  ] as const) {
    server.reset();
    await correct(buildPage(HOOKER_RECOGNISED), tier, preset);
    assert.equal(server.requests.length, 1);
    const [request] = server.requests;
    assert.equal(request.path, '/v1/chat/completions');
    assert.equal(request.model, expected[tier]);
    assert.equal(request.headers.authorization, 'Bearer none', 'no key configured: a placeholder the server ignores');
    assert.equal(request.body.messages[0].role, 'system');
    assert.ok(request.system.includes(PRESET_PROMPTS[preset]));
    assert.deepEqual(request.body.response_format, {
      type: 'json_schema',
      json_schema: { name: 'corrected_lines', strict: true, schema: ANSWER_SCHEMA },
    });
    assert.equal(request.body.temperature, 0);
    assert.deepEqual(
      requestLines(request.userText),
      HOOKER_RECOGNISED.map((line) => ({ id: line.id, confidence: line.confidence, text: line.text })),
    );
    assert.equal(request.image, null, 'self-hosted models get no image unless OPENAI_BEST_TIER_IMAGE=1');
    assert.equal(request.headers['x-stainless-retry-count'], '0', 'the SDK does not retry on its own');
  }
});

test('with OPENAI_BEST_TIER_IMAGE=1 and a key, the best tier sends the downscaled page as a data URL', async () => {
  await correct(
    buildPage(HOOKER_RECOGNISED),
    'best',
    'generic',
    corrector({ OPENAI_BEST_TIER_IMAGE: '1', OPENAI_API_KEY: 'local-secret' }),
  );
  const [request] = server.requests;
  assert.equal(request.headers.authorization, 'Bearer local-secret');
  assert.equal(request.image?.mimeType, 'image/jpeg');
  const metadata = await sharp(request.image.data).metadata();
  assert.deepEqual([metadata.width, metadata.height], [1378, 2048]);
  server.reset();
  await correct(buildPage(HOOKER_RECOGNISED), 'balanced', 'generic', corrector({ OPENAI_BEST_TIER_IMAGE: '1' }));
  assert.equal(server.requests[0].image, null, 'only the best tier sends it');
});

test('good corrections are applied with the usage the server reports', async () => {
  server.handle((request) => ({ ...correctEverything(request), usage: { input: 640, output: 151 } }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.deepEqual(texts(corrected), truth);
  assert.deepEqual(corrected.correction, {
    provider: 'openai',
    model: 'qwen2.5-7b-instruct',
    refusedLines: [],
    inputTokens: 640,
    outputTokens: 151,
    outcome: 'applied',
  });
  assert.deepEqual(
    allLines(corrected)[3].words.map((word) => word.text),
    ['to', 'hard', 'blows', 'with', 'the', 'Indian'],
  );
});

test('over-corrections are refused line by line', async () => {
  server.handle(() =>
    answerLines(
      HOOKER_RECOGNISED.map((line) => ({
        id: line.id,
        text: line.id === 'r1l2' ? 'by whatever he happens to be doing with them' : HOOKER_TRUTH[line.id],
      })),
    ),
  );
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(allLines(corrected)[1].text, 'by what he is doinq with tho');
  assert.equal(corrected.correction?.refusedLines.length, 1);
  assert.equal(corrected.correction?.refusedLines[0].id, 'r1l2');
  assert.match(corrected.correction?.refusedLines[0].reason ?? '', /^edit ratio 0\.\d\d over 0\.3$/);
});

test('a dropped line, then malformed output: the page keeps its recognised text, with a warning', async () => {
  server.enqueue(answerLines([{ id: 'r1l1', text: HOOKER_TRUTH.r1l1 }]), answerText('```\nI cannot read this page.\n```'));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  assert.deepEqual(texts(corrected), recognised);
  assert.deepEqual(corrected.warnings, [
    'correction rejected: the answer is not valid JSON (2 answers refused); the recognised text was kept',
  ]);
});

test('429 with Retry-After is honoured', async () => {
  server.enqueue(errorReply(429, { 'retry-after': '1' }));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  const waited = server.requests[1].receivedAt - server.requests[0].receivedAt;
  assert.ok(waited >= 990, `waited ${waited.toFixed(0)} ms`);
  assert.deepEqual(texts(corrected), truth);
});

test("retry-after-ms (OpenAI's finer header) is honoured too", async () => {
  // Were Retry-After read first, an hour would end the retries at once (one request only).
  server.enqueue(errorReply(429, { 'retry-after-ms': '400', 'retry-after': '3600' }));
  await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 2);
  const waited = server.requests[1].receivedAt - server.requests[0].receivedAt;
  assert.ok(waited >= 390, `waited ${waited.toFixed(0)} ms`);
});

test('an outage keeps the recognised text and warns', async () => {
  server.handle(() => errorReply(500));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED), 'best');
  assert.equal(server.requests.length, 3);
  assert.deepEqual(texts(corrected), recognised);
  assert.deepEqual(corrected.warnings, [
    'correction unavailable: openai-compatible server answered HTTP 500 (retries exhausted after 3 attempts); the recognised text was kept',
  ]);
  assert.equal(corrected.correction?.model, 'qwen2.5-vl-72b-instruct');
  assert.equal(corrected.correction?.outcome, 'unavailable');
});

test('timeouts are retried, then the page keeps its recognised text', async () => {
  server.handle(() => ({ type: 'hang' }));
  const corrected = await correct(
    buildPage(HOOKER_RECOGNISED),
    'cheap',
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

test('an unknown model (404) is not retried', async () => {
  server.handle(() => errorReply(404));
  const corrected = await correct(buildPage(HOOKER_RECOGNISED));
  assert.equal(server.requests.length, 1);
  assert.deepEqual(corrected.warnings, [
    'correction unavailable: openai-compatible server answered HTTP 404 (not retryable after 1 attempt); the recognised text was kept',
  ]);
});

test('the SDK takes nothing from the environment: OPENAI_ORG_ID and OPENAI_PROJECT_ID add no headers', async () => {
  const saved = { ...process.env };
  process.env.OPENAI_ORG_ID = 'org-from-env';
  process.env.OPENAI_PROJECT_ID = 'proj-from-env';
  process.env.OPENAI_API_KEY = 'key-from-env';
  try {
    await correct(buildPage(HOOKER_RECOGNISED));
    const [request] = server.requests;
    assert.equal(request.headers['openai-organization'], undefined);
    assert.equal(request.headers['openai-project'], undefined);
    assert.equal(request.headers.authorization, 'Bearer none');
  } finally {
    process.env = saved;
  }
});
