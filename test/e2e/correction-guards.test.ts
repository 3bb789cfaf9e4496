// The correction guards through real service jobs (issue 46): real handwritten pages with their
// ground truth, submitted over HTTP, read by the real page pipeline (layout, recognition with each
// line's frames, correction), corrected by the guard evaluation's stand-in models
// (bench/lib/stand-in-correctors.ts) through the real SDKs against FakeLlmServer, the OpenAI-compatible
// wire format in one service and Gemini's in another. Per behaviour: what the guard let through and
// refused, each refusal with its reason in the page result, the PageCompleted event and the page's
// lines (GET …/pages/{n}); a perfect corrector makes the pages better, a fluent stranger (shifting,
// hallucinating) changes nothing, and no misbehaving stand-in makes a page worse by more than the
// evaluation's margin (0.5 CER points). Projections verify after the jobs.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, type TestContext, test } from 'node:test';
import { readJobPages } from '../../projections/job-status.ts';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { readPageResult } from '../../src/pipeline/page-result-reader.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { allLines, type PageResult } from '../../src/recognition/page/page-result.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { startHttpServer } from '../../src/server/http-server.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { createApiKey, createAccount } from '../../src/use-cases/accounts.ts';
import { type Behaviour, standInAnswer, standInHandler, type StandInPage } from '../../bench/lib/stand-in-correctors.ts';
import { normaliseText, scorePage } from '../../bench/lib/text-metrics.ts';
import { requestLines } from '../support/correction-pages.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';
import { FakeLlmServer } from '../support/fake-llm-server.ts';
import { ApiClient, type Auth, FIXTURES, makeZip, waitForState } from '../support/http-client.ts';

/** Two real pages of hands the recognizer reads 10-20 % wrong, with their ground truth. */
const PAGES = [
  { entry: 'p1/hooker.jpg', image: 'correction/hooker_JDH_2_16_144_002.jpg', truth: 'correction/hooker_JDH_2_16_144_002.gt.txt' },
  { entry: 'p2/peraire.jpg', image: 'pages/peraire_test_B.12.japon3_0048.jpg', truth: 'pages/peraire_test_B.12.japon3_0048.gt.txt' },
];
const groundTruth = await Promise.all(
  PAGES.map(async (page) => (await readFile(path.join(FIXTURES, page.truth), 'utf8')).split('\n').filter((line) => line.trim() !== '')),
);
const zip = await makeZip(
  await Promise.all(PAGES.map(async (page) => ({ name: page.entry, data: await readFile(path.join(FIXTURES, page.image)) }))),
);

/**
 * The stand-in's page for a request: the fixture page whose ground truth is nearest the request's
 * lines (the service sends no page name); hallucinating answers with the other page's lines.
 */
function standInPageFor(lines: readonly string[]): StandInPage {
  const words = (texts: readonly string[]) => new Set(texts.flatMap((text) => normaliseText(text).toLowerCase().split(' ')));
  const asked = words(lines);
  const overlap = groundTruth.map((truth) => [...words(truth)].filter((word) => asked.has(word)).length);
  const index = overlap.indexOf(Math.max(...overlap));
  return { groundTruth: groundTruth[index], otherText: groundTruth.filter((_, other) => other !== index).flat() };
}

const llm = await FakeLlmServer.start();
let behaviour: Behaviour = 'perfect';
llm.handle((request) => {
  const lines = requestLines(request.userText);
  return standInHandler(behaviour, () => standInPageFor(lines.map((line) => line.text)))(request);
});

interface Service {
  runtime: Runtime;
  client: ApiClient;
  auth: Auth;
  close(): Promise<void>;
}

/** The whole service with the real pipelines on `databaseUrl`, correcting through `api`'s wire format. */
async function startService(api: 'openai' | 'gemini', databaseUrl: string): Promise<Service> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const provider: Record<string, string> =
    api === 'openai'
      ? { CORRECTION_PROVIDER: 'openai', OPENAI_BASE_URL: llm.openaiBaseUrl, OPENAI_MODEL: 'stand-in' }
      : { CORRECTION_PROVIDER: 'gemini', GEMINI_API_KEY: 'stand-in', GEMINI_BASE_URL: llm.geminiBaseUrl };
  const config = await testConfig(databaseUrl, {
    BASE_URL: baseUrl,
    PAGE_RETRY_LIMIT: '0',
    TASK_HEARTBEAT_SECONDS: '60',
    CORRECTION_RETRIES: '0',
    ...provider,
  });
  const pipelines = await defaultPipelines(config, createLogger('silent'));
  const runtime = await startTestRuntime(config, pipelines);
  const server = await startHttpServer(runtime, port, '127.0.0.1');
  await createAccount(runtime.bus, `guards-${api}`);
  const { key } = await createApiKey(runtime.bus, `guards-${api}`, 'guards');
  return {
    runtime,
    client: new ApiClient(baseUrl),
    auth: { key },
    close: async () => {
      await server.close();
      await runtime.stop();
    },
  };
}

interface PageOutcome {
  /** CER (%) of the recognised text (before correction) and of the page as corrected. */
  before: number;
  after: number;
  changed: number;
  refused: number;
  /** The stand-in's answer differed from the recognised text on this many lines. */
  proposed: number;
}

/** Runs one job of both pages with the stand-in `as`, checks what every view records of the refusals, and scores the pages. */
async function runBehaviour(service: Service, as: Behaviour): Promise<PageOutcome[]> {
  behaviour = as;
  const { client, auth, runtime } = service;
  const submitted = await client.submit(zip, auth, { pipeline_steps: 'layout,recognition,correction', preset: 'generic' });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const jobId = submitted.body.job_id as string;
  const status = await waitForState(client, auth, jobId, ['done', 'failed'], 240_000);
  assert.equal(status.state, 'done', JSON.stringify(status));
  assert.doesNotMatch(String(status.warning_message ?? ''), /correction/, 'every page was corrected (no outage, no refused answer)');

  const events = (await client.get(`/v1/process-scan/${jobId}/events`, auth)).body.events as {
    type: string;
    data: { page: number; correction: { refusedLines: number; refused?: { id: string; reason: string }[]; outcome?: string } };
  }[];
  const rows = await readJobPages(runtime.db.pool, jobId);
  const outcomes: PageOutcome[] = [];
  for (const [index] of PAGES.entries()) {
    const number = index + 1;
    const row = rows.find((candidate) => candidate.page_number === number);
    assert.ok(row?.result_key);
    const result: PageResult = await readPageResult(runtime.blobs, row.result_key, number);
    const lines = allLines(result);
    const refusedLines = result.correction?.refusedLines ?? [];
    assert.equal(result.correction?.outcome, 'applied');

    // What the stand-in proposed: every line it changed is either applied or refused with a reason.
    const recognised = lines.map((line) => line.recognizedText ?? line.text);
    const answer = standInAnswer(
      as,
      lines.map((line, at) => ({ id: line.id, text: recognised[at] })),
      standInPageFor(recognised),
    );
    const norm = (text: string) => text.replace(/\s+/g, ' ').trim().normalize('NFC');
    const proposed = new Set(answer.filter((line, at) => norm(line.text) !== norm(recognised[at])).map((line) => line.id));
    const changed = new Set(lines.filter((line) => line.recognizedText !== undefined).map((line) => line.id));
    const refused = new Set(refusedLines.map((line) => line.id));
    assert.deepEqual(new Set([...changed, ...refused]), proposed, `${as}, page ${number}: every proposed line changed or refused`);
    for (const line of lines.filter((candidate) => changed.has(candidate.id)))
      assert.equal(norm(line.text), norm(answer.find((item) => item.id === line.id)?.text ?? ''), 'an accepted line reads as proposed');
    for (const line of refusedLines)
      assert.match(
        line.reason,
        /^(image likelihood lost|\d+ recognised characters in a row left unexplained|recognised ink of \d+\.\d left unexplained in a row|edit ratio)/,
        line.reason,
      );

    // The event carries the refusals, id and reason, beside their count.
    const completed = events.find((event) => event.type === 'PageCompleted' && event.data.page === number);
    assert.equal(completed?.data.correction.refusedLines, refusedLines.length);
    assert.deepEqual(completed?.data.correction.refused, refusedLines);

    // The customer's view of the page names each refused line with its reason (export ids: by order).
    const view = await client.get(`/v1/process-scan/${jobId}/pages/${number}`, auth);
    assert.equal(view.status, 200);
    const viewLines = view.body.lines as { id: string; correction_refused: string | null }[];
    assert.equal(viewLines.length, lines.length);
    assert.deepEqual(
      viewLines.map((line) => line.correction_refused),
      lines.map((line) => refusedLines.find((item) => item.id === line.id)?.reason ?? null),
    );

    const cer = (texts: string[]) => {
      const score = scorePage(texts, groundTruth[index]).characters;
      return (100 * score.errors) / Math.max(1, score.length);
    };
    outcomes.push({
      before: cer(recognised),
      after: cer(lines.map((line) => line.text)),
      changed: changed.size,
      refused: refused.size,
      proposed: proposed.size,
    });
  }
  return outcomes;
}

// Databases are made at the top level (their clean-up registers with the file's `after`).
const services = {
  openai: await startService('openai', await createTestDatabase()),
  gemini: await startService('gemini', await createTestDatabase()),
};
after(async () => {
  for (const service of Object.values(services)) await service.close();
  await llm.close();
});

/** What each page measured, as a test diagnostic (the reporter prints it under the test). */
function record(context: TestContext, outcomes: PageOutcome[]): void {
  for (const [index, page] of outcomes.entries())
    context.diagnostic(
      `page ${index + 1}: CER ${page.before.toFixed(2)} → ${page.after.toFixed(2)} %, proposed ${page.proposed}, changed ${page.changed}, refused ${page.refused}`,
    );
}

/** Page CER worse than before by more than this many points is a page made worse (the evaluation's margin). */
const PAGE_MARGIN = 0.5;

for (const [api, behaviours] of [
  ['openai', ['perfect', 'noisy', 'completing', 'hallucinating', 'guessing']],
  ['gemini', ['modernising', 'shifting', 'truncating', 'dropping']],
] as const) {
  describe(`stand-in correctors through real jobs, ${api} wire format`, { concurrency: false }, () => {
    const service = services[api];
    for (const as of behaviours) {
      test(`${as}: ${expectation(as)}`, { timeout: 300_000 }, async (context) => {
        const outcomes = await runBehaviour(service, as);
        record(context, outcomes);
        for (const [index, page] of outcomes.entries()) {
          const where = `${as}, page ${index + 1}: CER ${page.before.toFixed(2)} → ${page.after.toFixed(2)}`;
          assert.ok(page.proposed > 0, `${where}: the stand-in proposed changes`);
          switch (as) {
            // measured (ADR 0047's thresholds; crops from the halved page since 2026-11-29, which read page 2 at 11.4 %):
            // 18.5 → 0.4 and 11.4 → 1.8 % (one line of page 1 and two of page 2 refused; ADR 0046's, which allowed 8 an
            // edit on a supported page, 0.0 and 1.8); noisy 18.5 → 3.8 and 11.4 → 5.8 % (its one error in 25 characters
            // is a floor near 4 %: half of page 2's errors is the edge, so "better" is 40 % of them gone)
            case 'perfect':
              assert.ok(page.changed >= page.proposed - 2, `${where}: nearly every line changed`);
              assert.ok(page.after < page.before / 4, `${where}: the page reads far better`);
              break;
            case 'noisy':
              assert.ok(page.changed > page.proposed / 2, `${where}: most lines changed`);
              assert.ok(page.after < page.before * 0.6, `${where}: the page reads better`);
              break;
            case 'shifting':
            case 'hallucinating':
              assert.equal(page.changed, 0, `${where}: nothing accepted`);
              assert.equal(page.after, page.before, `${where}: the page text unchanged`);
              break;
            // measured: completing 18.5 → 17.7 and 11.4 → 11.4 %, modernising 18.5 → 1.5 and 11.4 → 1.8 %
            // (these pages have little to modernise), truncating 18.5 → 18.1 and 11.4 → 11.4 %,
            // guessing 18.5 → 10.8 and 11.4 → 3.3 % (4 and 3 lines refused), dropping 18.5 → 0.8 and 11.4 → 4.5 %
            // (2 and 11 lines refused: the lines that lost a word among them)
            default:
              assert.ok(page.after <= page.before + PAGE_MARGIN, `${where}: no page worse by more than ${PAGE_MARGIN} points`);
          }
        }
      });
    }
  });
}

function expectation(as: Behaviour): string {
  if (as === 'perfect' || as === 'noisy') return 'lines changed, each page reads better';
  if (as === 'shifting' || as === 'hallucinating') return 'every line refused with its reason, the page unchanged';
  return `no page worse by more than ${PAGE_MARGIN} CER points`;
}

test('projections verify after the jobs', async () => {
  for (const service of Object.values(services)) {
    assert.deepEqual((await verifyProjections(service.runtime.db.pool)).differences, []);
  }
});
