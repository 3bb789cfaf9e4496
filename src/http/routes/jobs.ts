// Status, result download, cancel and event history of one job. A job is visible
// only to keys of the account that created it; for any other key it does not exist.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { jobStreamId } from '../../../domain/events.ts';
import { BlobNotFoundError } from '../../blobs/blob-store.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import { readStream } from '../../store/read-stream.ts';
import { presentedKeyHash, type AuthContext, type Authenticate } from '../authenticate.ts';
import { eventJson } from '../../store/event-json.ts';
import { readJobStatus, readJobStatusForKey, type JobStatusRow } from '../../../projections/job-status.ts';
import { jobStatusBody } from '../job-view.ts';
import { HttpProblem } from '../problem.ts';
import { jobIdParam } from '../path-params.ts';

export function registerJobRoutes(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  const { baseUrl } = runtime.config;

  async function loadOwnJob(ctx: Context): Promise<JobStatusRow> {
    const jobId = jobIdParam(ctx);
    const auth = ctx.state.auth as AuthContext;
    if (jobId) {
      const row = await readJobStatus(runtime.db.pool, jobId, auth.accountId);
      if (row) return row;
    }
    throw jobNotFound(ctx);
  }

  router.get('/v1/process-scan/:jobId', async (ctx) => {
    const keyHash = presentedKeyHash(ctx);
    const row = await readJobStatusForKey(runtime.db.pool, keyHash, jobIdParam(ctx));
    authenticate.accept(ctx, row && { key_id: row.auth_key_id, account_id: row.auth_account_id });
    if (!row || row.job_id === null) throw jobNotFound(ctx);
    ctx.body = jobStatusBody(row, baseUrl);
  });

  router.delete('/v1/process-scan/:jobId', authenticate, async (ctx) => {
    const job = await loadOwnJob(ctx);
    const auth = ctx.state.auth as AuthContext;
    await runtime.bus.job(job.job_id, { type: 'CancelJob', now: new Date() }, { actor: auth.keyId, requestId: ctx.state.requestId });
    ctx.body = jobStatusBody(await loadOwnJob(ctx), baseUrl);
  });

  router.get('/v1/process-scan/:jobId/result', authenticate, async (ctx) => {
    const job = await loadOwnJob(ctx);
    // A failed or cancelled job never gets a result: not retryable, unlike one still on its way.
    if (job.state === 'failed')
      throw new HttpProblem('job_failed', `The job failed and has no result: ${job.error_message ?? 'no reason recorded'}`);
    if (job.state === 'cancelled')
      throw new HttpProblem('job_cancelled', 'The job was cancelled and has no result.', { title: 'Result not available' });
    if (job.state !== 'done') {
      throw new HttpProblem('job_not_done', `The job is ${job.state}; its result exists only once it is done.`, {
        title: 'Result not available',
      });
    }
    if (job.result_expired || Date.now() >= job.expires_at.getTime() || !job.archive_key) {
      throw new HttpProblem('result_expired', `The result was available until ${job.expires_at.toISOString()}.`);
    }
    const { blobs } = runtime;
    if (runtime.config.results.redirect && blobs.presignedGetUrl) {
      // The archive comes from the object store, not through this process (docs/deployment.md).
      if (!(await blobs.stat(job.archive_key))) throw new HttpProblem('result_expired', 'The result is no longer stored.');
      const ttl = Math.max(1, Math.min(runtime.config.results.urlTtlSeconds, Math.floor((job.expires_at.getTime() - Date.now()) / 1000)));
      const url = await blobs.presignedGetUrl(job.archive_key, {
        expiresInSeconds: ttl,
        filename: `${job.job_id}.zip`,
        contentType: 'application/zip',
      });
      ctx.status = 302;
      ctx.set('Location', url);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = ''; // no body: the URL is a credential for a few minutes, once in Location is enough
      return;
    }
    try {
      const stream = await runtime.blobs.stream(job.archive_key);
      const info = await runtime.blobs.stat(job.archive_key);
      ctx.status = 200;
      ctx.type = 'application/zip';
      ctx.length = info?.bytes ?? Number(job.archive_bytes);
      ctx.set('Content-Disposition', `attachment; filename="${job.job_id}.zip"`);
      ctx.body = stream;
    } catch (error) {
      if (error instanceof BlobNotFoundError) throw new HttpProblem('result_expired', 'The result is no longer stored.');
      throw error;
    }
  });

  router.get('/v1/process-scan/:jobId/events', authenticate, async (ctx) => {
    const job = await loadOwnJob(ctx);
    const events = await readStream(runtime.db.pool, jobStreamId(job.job_id));
    ctx.body = { job_id: job.job_id, events: events.map(eventJson) };
  });
}

function jobNotFound(ctx: Context): HttpProblem {
  return new HttpProblem('job_not_found', `No job ${String(ctx.params.jobId)}.`);
}
