// Billing (docs/billing.md): one row per done job; the correction tier only when correction ran.
// A job whose steps leave correction out, a job with no provider configured, and a job whose
// provider was unavailable or whose answers were refused are billed at tier 'none'; a job with
// at least one page corrected is billed at its tier, with the count of corrected pages. Tokens
// of every page the provider answered are in correction_usage whatever the billing tier.
// Verify stays exact, and migration 0008 recomputes rows written by the previous rule.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { billingReport } from '../../projections/billing.ts';
import { MIGRATIONS_DIR } from '../../src/store/migrate.ts';
import type { CorrectionInfo } from '../../src/recognition/page/page-result.ts';
import type { PagePipeline } from '../../src/pipeline/pipeline.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, submitTestJob, testAccount, testConfig, waitForJobState } from '../support/engine.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

/** What the fake corrector answers, by the job's preset: an outcome per page, or no corrector. */
const SCRIPTS: Record<string, Array<CorrectionInfo['outcome'] | 'no-outcome'> | 'no-corrector'> = {
  'all-applied': ['applied', 'applied', 'applied'],
  mixed: ['applied', 'unavailable', 'rejected'],
  'never-corrected': ['unavailable', 'rejected', 'rejected'],
  'no-outcome': ['no-outcome', 'no-outcome', 'no-outcome'],
  'no-corrector': 'no-corrector',
};

function correctingPipeline(): PagePipeline {
  const base = testPagePipeline({ worker: 'billing' });
  return {
    async processPage(task, context) {
      const page = await base.processPage(task, context);
      if (!task.options.pipelineSteps.includes('correction')) return page;
      const script = SCRIPTS[task.options.preset];
      if (script === 'no-corrector' || script === undefined)
        return { ...page, warnings: [...page.warnings, 'correction skipped: no corrector configured'] };
      const outcome = script[task.page.pageNumber - 1];
      const tokens = outcome === 'unavailable' ? { inputTokens: 0, outputTokens: 0 } : { inputTokens: 100, outputTokens: 40 };
      const correction: CorrectionInfo = { provider: 'fake', model: `fake-${task.options.llmTier}`, refusedLines: [], ...tokens };
      return { ...page, correction: outcome === 'no-outcome' ? correction : { ...correction, outcome } };
    },
  };
}

const config = await testConfig(await createTestDatabase());
const runtime = await startTestRuntime(config, { page: correctingPipeline(), export: testExportPipeline() });
after(() => runtime.stop());

async function billingRow(jobId: string) {
  const rows = (await runtime.db.pool.query('select pages, tier, corrected_pages from billing where job_id = $1', [jobId])).rows;
  assert.equal(rows.length, 1, `one billing row for ${jobId}`);
  return rows[0] as { pages: number; tier: string; corrected_pages: number };
}

describe('billing', () => {
  test('the tier is billed only when correction ran on a page; verify stays exact; migration 0008 recomputes old rows', async () => {
    const accountId = await testAccount(runtime);
    const withoutStep = await submitTestJob(runtime, accountId, 3, {
      llmTier: 'best',
      preset: 'all-applied',
      pipelineSteps: ['layout', 'recognition', 'export'],
    });
    const noCorrector = await submitTestJob(runtime, accountId, 3, { llmTier: 'balanced', preset: 'no-corrector' });
    const allApplied = await submitTestJob(runtime, accountId, 3, { llmTier: 'cheap', preset: 'all-applied' });
    const mixed = await submitTestJob(runtime, accountId, 3, { llmTier: 'balanced', preset: 'mixed' });
    const neverCorrected = await submitTestJob(runtime, accountId, 3, { llmTier: 'best', preset: 'never-corrected' });
    const noOutcome = await submitTestJob(runtime, accountId, 3, { llmTier: 'balanced', preset: 'no-outcome' });
    const jobs = [withoutStep, noCorrector, allApplied, mixed, neverCorrected, noOutcome];
    for (const jobId of jobs) assert.equal(await waitForJobState(runtime, jobId, ['done', 'failed']), 'done');

    assert.deepEqual(await billingRow(withoutStep), { pages: 3, tier: 'none', corrected_pages: 0 }, 'steps without correction');
    assert.deepEqual(await billingRow(noCorrector), { pages: 3, tier: 'none', corrected_pages: 0 }, 'no provider configured');
    assert.deepEqual(await billingRow(allApplied), { pages: 3, tier: 'cheap', corrected_pages: 3 });
    assert.deepEqual(await billingRow(mixed), { pages: 3, tier: 'balanced', corrected_pages: 1 }, 'one page of three corrected');
    assert.deepEqual(
      await billingRow(neverCorrected),
      { pages: 3, tier: 'none', corrected_pages: 0 },
      'provider unavailable or answers refused',
    );
    assert.deepEqual(
      await billingRow(noOutcome),
      { pages: 3, tier: 'balanced', corrected_pages: 3 },
      'usage recorded before the outcome was: corrected',
    );

    // The outcome travels in the event; the tokens of the refused answers are in the usage report all the same.
    const completed = await runtime.db.pool.query(
      `select data->'correction' as correction from events where stream_id = $1 and type = 'PageCompleted' order by page`,
      [`job-${mixed}`],
    );
    assert.deepEqual(
      completed.rows.map((row) => row.correction.outcome),
      ['applied', 'unavailable', 'rejected'],
    );
    const usage = await runtime.db.pool.query(
      `select count(*)::int as pages, sum(input_tokens)::int as input from correction_usage where job_id = $1`,
      [neverCorrected],
    );
    assert.deepEqual(usage.rows[0], { pages: 3, input: 200 });

    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);

    // `hwr billing`'s report: per account, and per tier what an invoice prices.
    const [report] = await billingReport(runtime.db.pool, { accountId });
    assert.deepEqual(
      { jobs: report.jobs, pages: report.pages, corrected_pages: report.corrected_pages, tiers: report.tiers },
      {
        jobs: 6,
        pages: 18,
        corrected_pages: 7,
        tiers: {
          balanced: { jobs: 2, pages: 6, corrected_pages: 4 },
          cheap: { jobs: 1, pages: 3, corrected_pages: 3 },
          none: { jobs: 3, pages: 9, corrected_pages: 0 },
        },
      },
    );

    // Rows as the previous rule wrote them (the job's tier whatever ran): 0008 recomputes them.
    await runtime.db.pool.query(
      `update billing b set tier = q.data->'options'->>'llmTier', corrected_pages = 0
       from events q where q.stream_id = 'job-' || b.job_id and q.stream_version = 1 and b.job_id = any($1)`,
      [jobs],
    );
    assert.equal((await billingRow(withoutStep)).tier, 'best');
    assert.ok((await verifyProjections(runtime.db.pool)).differences.length > 0);
    await runtime.db.pool.query(await readFile(path.join(MIGRATIONS_DIR, '0008_billing_corrected_pages.sql'), 'utf8'));
    assert.deepEqual(await billingRow(withoutStep), { pages: 3, tier: 'none', corrected_pages: 0 });
    assert.deepEqual(await billingRow(mixed), { pages: 3, tier: 'balanced', corrected_pages: 1 });
    assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
  });
});
