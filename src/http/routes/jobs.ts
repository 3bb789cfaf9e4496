// Status, result download, cancel and event history of one job. A job is visible
// only to keys of the account that created it; for any other key it does not exist.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { jobStreamId } from '../../../domain/events.ts';
import { BlobNotFoundError } from '../../blobs/blob-store.ts';
import type { Runtime } from '../../runtime.ts';
import { readStream } from '../../store/read-stream.ts';
import { presentedKeyHash, type AuthContext, type Authenticate } from '../authenticate.ts';
import { eventJson } from '../event-json.ts';
import { JOB_STATUS_COLUMNS, jobStatusBody, jobStatusColumnsOf, type JobStatusRow } from '../job-view.ts';
import { HttpProblem } from '../problem.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// The key and the job in one round trip: status polling is the hot path. A job of
// another account does not join, exactly as a job that does not exist.
const STATUS_WITH_KEY_SQL = `select k.key_id as auth_key_id, k.account_id as auth_account_id, ${jobStatusColumnsOf('j')}
  from api_keys k left join job_status j on j.job_id = $2 and j.account_id = k.account_id
  where k.key_hash = $1 and k.revoked_at is null`;

type StatusWithKeyRow = JobStatusRow & { auth_key_id: string; auth_account_id: string };

export function registerJobRoutes(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  const { baseUrl } = runtime.config;

  async function loadOwnJob(ctx: Context): Promise<JobStatusRow> {
    const jobId = jobIdParam(ctx);
    const auth = ctx.state.auth as AuthContext;
    if (jobId) {
      const result = await runtime.db.pool.query<JobStatusRow>(
        `select ${JOB_STATUS_COLUMNS} from job_status where job_id = $1 and account_id = $2`,
        [jobId, auth.accountId],
      );
      if (result.rows[0]) return result.rows[0];
    }
    throw jobNotFound(ctx);
  }

  router.get('/v1/process-scan/:jobId', async (ctx) => {
    const keyHash = presentedKeyHash(ctx);
    const result = await runtime.db.pool.query<StatusWithKeyRow>({ name: 'hwr-status-with-key', text: STATUS_WITH_KEY_SQL, values: [keyHash, jobIdParam(ctx)] });
    const row = result.rows[0];
    authenticate.accept(ctx, row && { key_id: row.auth_key_id, account_id: row.auth_account_id });
    if (row.job_id === null) throw jobNotFound(ctx);
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

/** The job id of the path, lower-cased, or null when it is not a UUID (no such job). */
function jobIdParam(ctx: Context): string | null {
  const jobId = String(ctx.params.jobId);
  return UUID.test(jobId) ? jobId.toLowerCase() : null;
}

function jobNotFound(ctx: Context): HttpProblem {
  return new HttpProblem(404, 'job_not_found', 'Not found', `No job ${String(ctx.params.jobId)}.`);
}
