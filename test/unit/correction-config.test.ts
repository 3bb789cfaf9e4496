import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';
import { createCorrector, createProvider, NO_PROVIDER_WARNING } from '../../src/recognition/correction/create-corrector.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { FilesystemBlobStore } from '../../src/blobs/filesystem-blob-store.ts';
import { storedPageImage } from '../../src/pipeline/stored-page-image.ts';
import { buildPage, HOOKER_RECOGNISED, jobOptions } from '../support/correction-pages.ts';

const problems = (env: Record<string, string>) => {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
};

test('no key and no server: no provider; the corrector keeps the page and warns', async () => {
  const config = loadConfig({});
  assert.equal(config.correction.provider, null);
  assert.equal(createProvider(config.correction), null);
  const page = buildPage(HOOKER_RECOGNISED);
  const corrected = await createCorrector(config.correction).correct(page, {
    options: jobOptions('best', 'letter'),
    pageImage: storedPageImage(new FilesystemBlobStore('/nonexistent'), 'jobs/none/pages/1.jpg'),
    signal: new AbortController().signal,
    log: createLogger('silent'),
  });
  assert.deepEqual(corrected.regions, page.regions);
  assert.equal(corrected.correction, undefined);
  assert.deepEqual(corrected.warnings, [NO_PROVIDER_WARNING]);
  assert.deepEqual(page.warnings, [], 'the input page is not modified');
});

test('gemini: default models per tier, overridable; best tier sends the image unless turned off', () => {
  const gemini = loadConfig({ GEMINI_API_KEY: 'k' }).correction;
  assert.equal(gemini.provider, 'gemini');
  assert.deepEqual(gemini.models.gemini, { cheap: 'gemini-2.5-flash-lite', balanced: 'gemini-2.5-flash', best: 'gemini-2.5-pro' });
  assert.equal(gemini.bestTierImage.gemini, true);
  const overridden = loadConfig({ GEMINI_API_KEY: 'k', GEMINI_MODEL_BEST: 'gemini-3-pro', GEMINI_BEST_TIER_IMAGE: '0' }).correction;
  assert.equal(overridden.models.gemini.best, 'gemini-3-pro');
  assert.equal(overridden.bestTierImage.gemini, false);
  assert.equal(createProvider(gemini)?.name, 'gemini');
});

test('openai-compatible: OPENAI_MODEL serves every tier unless a tier names its own', () => {
  const openai = loadConfig({
    OPENAI_BASE_URL: 'http://llm.internal:8000/v1',
    OPENAI_MODEL: 'qwen2.5-7b',
    OPENAI_MODEL_BEST: 'qwen2.5-72b',
  }).correction;
  assert.equal(openai.provider, 'openai');
  assert.deepEqual(openai.models.openai, { cheap: 'qwen2.5-7b', balanced: 'qwen2.5-7b', best: 'qwen2.5-72b' });
  assert.equal(openai.bestTierImage.openai, false);
  const provider = createProvider(openai);
  assert.equal(provider?.name, 'openai');
  assert.equal(provider?.modelFor('best'), 'qwen2.5-72b');
  assert.equal(provider?.sendsImage('best'), false);
  assert.deepEqual(problems({ OPENAI_BASE_URL: 'http://llm.internal:8000/v1', OPENAI_MODEL_CHEAP: 'small' }), [
    'OPENAI_BASE_URL needs OPENAI_MODEL, or else OPENAI_MODEL_BALANCED, OPENAI_MODEL_BEST',
  ]);
});

test('both providers configured: CORRECTION_PROVIDER must choose', () => {
  const both = { GEMINI_API_KEY: 'k', OPENAI_BASE_URL: 'http://llm.internal:8000/v1', OPENAI_MODEL: 'm' };
  assert.deepEqual(problems(both), [
    'both GEMINI_API_KEY and OPENAI_BASE_URL are set: choose one with CORRECTION_PROVIDER=gemini|openai|none',
  ]);
  assert.equal(loadConfig({ ...both, CORRECTION_PROVIDER: 'openai' }).correction.provider, 'openai');
  assert.equal(loadConfig({ ...both, CORRECTION_PROVIDER: 'gemini' }).correction.provider, 'gemini');
  assert.equal(loadConfig({ ...both, CORRECTION_PROVIDER: 'none' }).correction.provider, null);
  assert.deepEqual(problems({ CORRECTION_PROVIDER: 'gemini' }), ['CORRECTION_PROVIDER=gemini needs GEMINI_API_KEY']);
  assert.equal(problems({ CORRECTION_PROVIDER: 'claude' }).length, 1);
});

test('retry and guard settings are validated', () => {
  const config = loadConfig({ CORRECTION_MAX_EDIT_RATIO: '0.5', CORRECTION_RETRIES: '0', CORRECTION_RETRY_BASE_MS: '10' }).correction;
  assert.deepEqual(
    [config.maxEditRatio, config.retries, config.retryBaseMs, config.maxRetryWaitMs, config.timeoutMs],
    [0.5, 0, 10, 60_000, 60_000],
  );
  assert.equal(problems({ CORRECTION_MAX_EDIT_RATIO: '1.5' }).length, 1);
  assert.equal(problems({ CORRECTION_RETRIES: '-1' }).length, 1);
});

test('the evidence guard: the dropped ink and the bounds of a supported page from the environment, a share of 1 turns them off', () => {
  const defaults = loadConfig({}).correction.lineGuard;
  assert.equal(defaults.kind, 'evidence');
  if (defaults.kind !== 'evidence') return;
  assert.equal(defaults.tiers.balanced.maxDroppedInk, 10);
  assert.equal(defaults.tiers.balanced.maxDroppedRun, Number.POSITIVE_INFINITY);
  assert.deepEqual(defaults.tiers.balanced.supportedPage, {
    minShare: 0.5,
    maxLossPerChar: Number.POSITIVE_INFINITY,
    confidenceSlack: 0,
    maxLossPerEdit: 6,
    maxDroppedInk: 10,
  });
  const set = loadConfig({
    CORRECTION_MAX_DROPPED_INK: '20',
    CORRECTION_MAX_DROPPED_RUN: '4',
    CORRECTION_SUPPORTED_PAGE_SHARE: '0.7',
    CORRECTION_SUPPORTED_MAX_LOSS_PER_CHAR: '3',
    CORRECTION_SUPPORTED_LOSS_CONFIDENCE_SLACK: '1',
    CORRECTION_SUPPORTED_MAX_LOSS_PER_EDIT: '9',
    CORRECTION_SUPPORTED_MAX_DROPPED_INK: '25',
  }).correction.lineGuard;
  assert.ok(set.kind === 'evidence');
  assert.equal(set.tiers.best.maxDroppedInk, 20);
  assert.equal(set.tiers.best.maxDroppedRun, 4);
  assert.deepEqual(set.tiers.bestWithImage.supportedPage, {
    minShare: 0.7,
    maxLossPerChar: 3,
    confidenceSlack: 1,
    maxLossPerEdit: 9,
    maxDroppedInk: 25,
  });
  assert.equal(problems({ CORRECTION_SUPPORTED_MAX_DROPPED_INK: '-1' }).length, 1);
  const off = loadConfig({ CORRECTION_SUPPORTED_PAGE_SHARE: '1' }).correction.lineGuard;
  assert.ok(off.kind === 'evidence');
  assert.equal(off.tiers.cheap.supportedPage, null);
});
