import type Router from '@koa/router';
import { billingReport } from '../../../projections/billing.ts';
import { correctionUsageReport } from '../../../projections/correction-usage.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { AuthContext, Authenticate } from '../authenticate.ts';
import { HttpProblem } from '../problem.ts';

/**
 * GET /v1/usage?from=&to=: billed pages of the calling account (done jobs; `to` exclusive), the
 * models trained in the period and their trained lines (docs/billing.md, "Trained models"), and
 * its LLM correction usage (pages corrected and tokens per provider and model).
 */
export function registerUsage(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  router.get('/v1/usage', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const from = dateParam(ctx.query.from, 'from');
    const to = dateParam(ctx.query.to, 'to');
    const [line] = await billingReport(runtime.db.pool, { accountId: auth.accountId, from, to });
    ctx.body = {
      account_id: auth.accountId,
      from: from?.toISOString() ?? null,
      to: to?.toISOString() ?? null,
      jobs: line?.jobs ?? 0,
      pages: line?.pages ?? 0,
      models_trained: line?.models_trained ?? 0,
      lines_trained: line?.lines_trained ?? 0,
      correction: await correctionUsageReport(runtime.db.pool, { accountId: auth.accountId, from, to }),
    };
  });
}

function dateParam(value: unknown, name: string): Date | null {
  if (value === undefined || value === '') return null;
  const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new HttpProblem('invalid_date', `${name} must be an ISO 8601 date or timestamp.`);
  return date;
}
