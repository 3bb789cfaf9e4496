// Status, result download, cancel and event history of one job. A job is visible
// only to keys of the account that created it; for any other key it does not exist.
import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { jobStreamId } from '../../../domain/events.ts';
import { BlobNotFoundError } from '../../blobs/blob-store.ts';
import type { Runtime } from '../../runtime.ts';
import { readStream } from '../../store/read-stream.ts';
import type { AuthContext } from '../authenticate.ts';
import { eventJson } from '../event-json.ts';
import { JOB_STATUS_COLUMNS, jobStatusBody, type JobStatusRow } from '../job-view.ts';
import { HttpProblem } from '../problem.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function registerJobRoutes(router: Router, runtime: Runtime, authenticate: (ctx: Context, next: Next) => Promise<void>): void {
  const { baseUrl } = runtime.config;

  async function loadOwnJob(ctx: Context): Promise<JobStatusRow> {
    const jobId = String(ctx.params.jobId);
    const auth = ctx.state.auth as AuthContext;
    if (UUID.test(jobId)) {
      const result = await runtime.db.pool.query<JobStatusRow>(
        `select ${JOB_STATUS_COLUMNS} from job_status where job_id = $1 and account_id = $2`,
        [jobId.toLowerCase(), auth.accountId],
      );
      if (result.rows[0]) return result.rows[0];
    }
    throw new HttpProblem(404, 'job_not_found', 'Not found', `No job ${jobId}.`);
  }

  router.get('/v1/process-scan/:jobId', authenticate, async (ctx) => {
    ctx.body = jobStatusBody(await loadOwnJob(ctx), baseUrl);
  });

  router.delete('/v1/process-scan/:jobId', authenticate, async (ctx) => {
    const job = await loadOwnJob(ctx);
    const auth = ctx.state.auth as AuthContext;
    await runtime.bus.job(job.job_id, { type: 'CancelJob', now: new Date() }, { actor: auth.keyId, requestId: ctx.state.requestId });
    ctx.body = jobStatusBody(await loadOwnJob(ctx), baseUrl);
  });

  router.get('/v1/process-scan/:jobId/result', authenticate, async (ctx) => {
    const job = await loadOwnJob(ctx);
    if (job.state !== 'done') {
      throw new HttpProblem(409, 'job_not_done', 'Result not available', `The job is ${job.state}; its result exists only once it is done.`);
    }
    if (job.result_expired || Date.now() >= job.expires_at.getTime() || !job.archive_key) {
      throw new HttpProblem(410, 'result_expired', 'Result expired', `The result was available until ${job.expires_at.toISOString()}.`);
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
      if (error instanceof BlobNotFoundError) throw new HttpProblem(410, 'result_expired', 'Result expired', 'The result is no longer stored.');
      throw error;
    }
  });

  router.get('/v1/process-scan/:jobId/events', authenticate, async (ctx) => {
    const job = await loadOwnJob(ctx);
    const events = await readStream(runtime.db.pool, jobStreamId(job.job_id));
    ctx.body = { job_id: job.job_id, events: events.map(eventJson) };
  });
}
