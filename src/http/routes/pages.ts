// A done job's pages for reading closely and correcting (docs/corrections.md): a page's lines as
// JSON, a save of corrected lines, the job's timeline in a customer's words, and a training on
// the job's corrected pages (docs/models.md). Another account's job does not exist (404).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { Rejection } from '../../../domain/rejections.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import { readJobStatus } from '../../../projections/job-status.ts';
import { correctPageText, parseCorrectionBody, readPageForCorrection } from '../../use-cases/corrections.ts';
import { CorrectionError, ModelError } from '../../use-cases/errors.ts';
import { checkLabel } from '../../use-cases/models.ts';
import { jobTimeline } from '../../use-cases/timeline.ts';
import { parseJobTrainingBody, queueTrainingFromJob } from '../../use-cases/train-from-job.ts';
import type { AuthContext, Authenticate } from '../authenticate.ts';
import { readJsonBody } from '../json-body.ts';
import { modelStatusUrl } from '../model-view.ts';
import { HttpProblem } from '../problem.ts';
import { parseModelField } from '../submission-options.ts';
import { refuseWithoutTrainer } from '../training-upload.ts';
import { jobIdParam } from '../path-params.ts';

export function registerPageRoutes(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  const { baseUrl } = runtime.config;

  router.get('/v1/process-scan/:jobId/pages/:page', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    ctx.body = await readPageForCorrection(runtime, auth, jobIdParam(ctx), pageParam(ctx));
  });

  router.put('/v1/process-scan/:jobId/pages/:page/text', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const jobId = jobIdParam(ctx);
    const page = pageParam(ctx);
    const body = await readJsonBody(
      ctx,
      (why) => new CorrectionError('invalid_correction_body', `The body must be {"lines": [{"id": LINE_ID, "text": "…"}, …]}: ${why}.`),
    );
    const lines = parseCorrectionBody(body);
    try {
      ctx.body = await correctPageText(runtime, auth, jobId, page, { lines, requestId: ctx.state.requestId });
    } catch (error) {
      // The decider's guard against a job that expired while the save was on its way: the same answer as before it.
      if (error instanceof Rejection && error.code === 'job_expired') throw new CorrectionError('result_expired', error.message);
      throw error;
    }
    ctx.state.log.info({ job_id: jobId, page, lines: lines.length }, 'page text corrected');
  });

  router.get('/v1/process-scan/:jobId/timeline', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const jobId = jobIdParam(ctx);
    const entries = jobId ? await jobTimelineOfOwnJob(runtime, auth.accountId, jobId) : null;
    if (!entries) throw new HttpProblem('job_not_found', `No job ${String(ctx.params.jobId)}.`);
    ctx.body = { job_id: jobId, entries };
  });

  router.post('/v1/process-scan/:jobId/models', authenticate, refuseWithoutTrainer(runtime), async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const body = await readJsonBody(ctx, (why) => new ModelError('invalid_training_request', `The body must be a JSON object: ${why}.`), {
      optional: true,
    });
    const request = parseJobTrainingBody(body);
    const model = await queueTrainingFromJob(runtime, {
      accountId: auth.accountId,
      keyId: auth.actor ? null : auth.keyId,
      actor: auth.actor,
      jobId: jobIdParam(ctx),
      pages: request.pages,
      checkedPages: request.checkedPages,
      label: checkLabel(request.label),
      baseModel: parseModelField(request.baseModel, 'base_model'),
      requestId: ctx.state.requestId,
    });
    ctx.state.log.info({ model_id: model.model_id, job_id: jobIdParam(ctx), lines: model.lines_total }, 'model training queued from a job');
    ctx.status = 202;
    ctx.set('Location', modelStatusUrl(baseUrl, model.model_id));
    ctx.body = {
      model_id: model.model_id,
      state: 'queued',
      label: model.label,
      created_at: model.created_at.toISOString(),
      status_url: modelStatusUrl(baseUrl, model.model_id),
      lines_total: model.lines_total,
      pages_total: model.pages_total,
    };
  });
}

/** The timeline of a job of the account; null when the account has no such job. */
async function jobTimelineOfOwnJob(runtime: Runtime, accountId: string, jobId: string) {
  if (!(await readJobStatus(runtime.db.pool, jobId, accountId))) return null;
  return jobTimeline(runtime.db.pool, accountId, jobId);
}

/** The page number of the path; anything but a positive integer names no page (404). */
function pageParam(ctx: Context): number {
  const raw = String(ctx.params.page);
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) throw new Rejection('unknown_page', `The job has no page ${raw.slice(0, 20)}.`);
  return Number(raw);
}
