import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Serves GET /v1/process-scan/<id>: one row per job (job_status) and one per page
// (job_pages, which also tells the export task where each page result is).
export const jobStatusProjection: Projection = {
  name: 'job_status',
  tables: ['job_status', 'job_pages'],
  handles: [
    'JobQueued',
    'JobStarted',
    'StepStarted',
    'PageCompleted',
    'JobSucceeded',
    'JobFailed',
    'JobCancelled',
    'CallbackAttempted',
    'CallbackAbandoned',
    'ResultExpired',
    'PageTextCorrected',
    'ResultReexported',
  ],
  apply: `
declare
  job uuid := substring(e.stream_id from 5)::uuid;
  page integer;
begin
  case e.type
  when 'JobQueued' then
    insert into job_status (job_id, account_id, state, page_count, pages_done, current_step, created_at,
      expires_at, options, upload_key, result_expired, callback_attempts, version)
    values (job, (e.data->>'accountId')::uuid, 'queued', (e.data->>'pageCount')::int, 0, null,
      (e.data->>'createdAt')::timestamptz, (e.data->>'expiresAt')::timestamptz, e.data->'options',
      e.data->>'uploadKey', false, 0, e.stream_version);
    insert into job_pages (job_id, page_number, name, blob_key, sha256, bytes, completed)
    select job, (p->>'pageNumber')::int, p->>'name', p->>'blobKey', p->>'sha256', (p->>'bytes')::bigint, false
    from jsonb_array_elements(e.data->'pages') as p;
  when 'JobStarted' then
    update job_status set state = 'processing', started_at = (e.data->>'startedAt')::timestamptz,
      current_step = 'layout', version = e.stream_version where job_id = job;
  when 'StepStarted' then
    if e.data->'page' = 'null'::jsonb then
      update job_status set version = e.stream_version where job_id = job;
    else
      page := (e.data->>'page')::int;
      update job_pages set step = e.data->>'step' where job_id = job and page_number = page;
      update job_status set current_step = hwr_job_current_step(job), version = e.stream_version
        where job_id = job and state = 'processing';
    end if;
  when 'PageCompleted' then
    page := (e.data->>'page')::int;
    update job_pages set completed = true, result_key = e.data->>'resultKey', line_count = (e.data->>'lineCount')::int
      where job_id = job and page_number = page;
    update job_status set pages_done = pages_done + 1, version = e.stream_version,
      current_step = case when state = 'processing' then hwr_job_current_step(job) else current_step end
      where job_id = job;
  when 'JobSucceeded' then
    update job_status set state = 'done', current_step = null, finished_at = (e.data->>'finishedAt')::timestamptz,
      warning_message = e.data->>'warningMessage', archive_key = e.data->>'archiveKey',
      archive_bytes = (e.data->>'archiveBytes')::bigint, archive_sha256 = e.data->>'archiveSha256',
      callback_state = case when options->>'webhookUrl' is not null then 'pending' end,
      callback_next_attempt_at = case when options->>'webhookUrl' is not null then (e.data->>'finishedAt')::timestamptz end,
      version = e.stream_version
      where job_id = job;
  when 'JobFailed' then
    update job_status set state = 'failed', current_step = null, finished_at = (e.data->>'finishedAt')::timestamptz,
      error_message = e.data->>'errorMessage',
      callback_state = case when options->>'webhookUrl' is not null then 'pending' end,
      callback_next_attempt_at = case when options->>'webhookUrl' is not null then (e.data->>'finishedAt')::timestamptz end,
      version = e.stream_version
      where job_id = job;
  when 'JobCancelled' then
    update job_status set state = 'cancelled', current_step = null, finished_at = (e.data->>'cancelledAt')::timestamptz,
      version = e.stream_version where job_id = job;
  when 'CallbackAttempted' then
    update job_status set callback_attempts = (e.data->>'attempt')::int,
      callback_state = case when (e.data->>'ok')::boolean then 'delivered'
                            when e.data->'nextAttemptAt' <> 'null'::jsonb then 'retrying' else 'abandoned' end,
      callback_next_attempt_at = (e.data->>'nextAttemptAt')::timestamptz,
      callback_last_status = (e.data->>'httpStatus')::int,
      version = e.stream_version
      where job_id = job;
  when 'CallbackAbandoned' then
    update job_status set callback_state = 'abandoned', callback_next_attempt_at = null, version = e.stream_version
      where job_id = job;
  when 'ResultExpired' then
    update job_status set result_expired = true, version = e.stream_version where job_id = job;
  when 'PageTextCorrected' then
    update job_status set version = e.stream_version where job_id = job;
  when 'ResultReexported' then
    -- the download serves the newest archive (docs/corrections.md)
    update job_status set archive_key = e.data->>'archiveKey', archive_bytes = (e.data->>'archiveBytes')::bigint,
      archive_sha256 = e.data->>'archiveSha256', version = e.stream_version where job_id = job;
  end case;
end`,
};

// Reads of this read model: the status route, the submission's answer, the cancel watch.

export interface JobStatusRow {
  job_id: string;
  account_id: string;
  state: string;
  page_count: number;
  pages_done: number;
  current_step: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  expires_at: Date;
  error_message: string | null;
  warning_message: string | null;
  options: { webhookUrl: string | null };
  archive_key: string | null;
  archive_bytes: string | null;
  result_expired: boolean;
  callback_state: string | null;
  callback_attempts: number;
  callback_next_attempt_at: Date | null;
  callback_last_status: number | null;
}

export const JOB_STATUS_COLUMNS = `job_id, account_id, state, page_count, pages_done, current_step, created_at, started_at,
  finished_at, expires_at, error_message, warning_message, options, archive_key, archive_bytes, result_expired,
  callback_state, callback_attempts, callback_next_attempt_at, callback_last_status`;

/** The same columns of job_status under a table alias (for queries that join it). */
export const jobStatusColumnsOf = (alias: string): string =>
  JOB_STATUS_COLUMNS.split(',')
    .map((column) => `${alias}.${column.trim()}`)
    .join(', ');

/** A job's status row; with `accountId`, only when that account owns the job. */
export async function readJobStatus(db: Queryable, jobId: string, accountId?: string): Promise<JobStatusRow | undefined> {
  const result = accountId
    ? await db.query<JobStatusRow>(`select ${JOB_STATUS_COLUMNS} from job_status where job_id = $1 and account_id = $2`, [jobId, accountId])
    : await db.query<JobStatusRow>(`select ${JOB_STATUS_COLUMNS} from job_status where job_id = $1`, [jobId]);
  return result.rows[0];
}

/** A job's state alone, or undefined when there is no such job. */
export async function readJobState(db: Queryable, jobId: string): Promise<string | undefined> {
  const result = await db.query<{ state: string }>('select state from job_status where job_id = $1', [jobId]);
  return result.rows[0]?.state;
}

/** The ids among `jobIds` of jobs that have a status row. */
export async function readKnownJobIds(db: Queryable, jobIds: readonly string[]): Promise<Set<string>> {
  const result = await db.query<{ job_id: string }>('select job_id::text from job_status where job_id = any($1::uuid[])', [jobIds]);
  return new Set(result.rows.map((row) => row.job_id));
}

export type JobStatusWithKeyRow = JobStatusRow & { auth_key_id: string; auth_account_id: string };

// The key and the job in one round trip: status polling is the hot path. A job of another
// account does not join, exactly as a job that does not exist. (It reads api_keys too.)
const STATUS_WITH_KEY_SQL = `select k.key_id as auth_key_id, k.account_id as auth_account_id, ${jobStatusColumnsOf('j')}
  from api_keys k left join job_status j on j.job_id = $2 and j.account_id = k.account_id
  where k.key_hash = $1 and k.revoked_at is null`;

/** The active key with this hash and, when its account owns it, the job; undefined for no such key. */
export async function readJobStatusForKey(db: Queryable, keyHash: string, jobId: string | null): Promise<JobStatusWithKeyRow | undefined> {
  const result = await db.query<JobStatusWithKeyRow>({ name: 'hwr-status-with-key', text: STATUS_WITH_KEY_SQL, values: [keyHash, jobId] });
  return result.rows[0];
}

/** An account's failed and cancelled jobs and their pages, by state: what was not billed. */
export async function unbilledJobsByState(
  db: Queryable,
  accountId: string,
): Promise<Array<{ state: string; jobs: number; pages: number }>> {
  const result = await db.query<{ state: string; jobs: string; pages: string }>(
    `select state, count(*) as jobs, sum(page_count) as pages from job_status
     where account_id = $1 and state in ('failed', 'cancelled') group by state order by state`,
    [accountId],
  );
  return result.rows.map((row) => ({ state: row.state, jobs: Number(row.jobs), pages: Number(row.pages) }));
}

/** Jobs by state, for the metrics endpoint. */
export async function countJobsByState(db: Queryable): Promise<Array<{ state: string; count: number }>> {
  const result = await db.query<{ state: string; count: string }>('select state, count(*) as count from job_status group by state');
  return result.rows.map((row) => ({ state: row.state, count: Number(row.count) }));
}

/** Queued and processing jobs, oldest first: what the stranded-jobs sweep looks at. */
export async function readRunningJobs(
  db: Queryable,
  limit: number,
): Promise<Array<{ job_id: string; page_count: number; pages_done: number }>> {
  const result = await db.query<{ job_id: string; page_count: number; pages_done: number }>(
    `select job_id, page_count, pages_done from job_status where state in ('queued', 'processing') order by created_at limit $1`,
    [limit],
  );
  return result.rows;
}

/** An account's queued and processing jobs: the submission limits and the page tasks' fair share read them. */
export async function readAccountUnfinishedJobs(
  db: Queryable,
  accountId: string,
): Promise<Array<{ job_id: string; page_count: number; pages_done: number }>> {
  const result = await db.query<{ job_id: string; page_count: number; pages_done: number }>(
    `select job_id, page_count, pages_done from job_status where account_id = $1 and state in ('queued', 'processing')`,
    [accountId],
  );
  return result.rows;
}

/** Ended jobs whose result has reached its expiry and is not expired yet, soonest first. */
export async function readExpiredResultsDue(db: Queryable, now: Date, limit: number): Promise<string[]> {
  const result = await db.query<{ job_id: string }>(
    `select job_id from job_status
     where not result_expired and expires_at <= $1 and state in ('done', 'failed', 'cancelled')
     order by expires_at limit $2`,
    [now, limit],
  );
  return result.rows.map((row) => row.job_id);
}

export interface JobListRow {
  job_id: string;
  state: string;
  page_count: number;
  pages_done: number;
  current_step: string | null;
  created_at: Date;
  finished_at: Date | null;
  /** The name of the job's first page (its path in the ZIP), to tell jobs apart by. */
  first_page: string | null;
}

/** An account's jobs, newest first, one page of a list. */
export async function listAccountJobs(db: Queryable, accountId: string, limit: number, offset: number): Promise<JobListRow[]> {
  const result = await db.query<JobListRow>(
    `select job_id, state, page_count, pages_done, current_step, created_at, finished_at,
            (select name from job_pages p where p.job_id = job_status.job_id and p.page_number = 1) as first_page
     from job_status where account_id = $1 order by created_at desc, job_id desc limit $2 offset $3`,
    [accountId, limit, offset],
  );
  return result.rows;
}

export interface JobPageRow {
  page_number: number;
  name: string;
  blob_key: string;
  sha256: string;
  completed: boolean;
  result_key: string | null;
  line_count: number | null;
}

/** A job's pages in page order (job_pages). */
export async function readJobPages(db: Queryable, jobId: string): Promise<JobPageRow[]> {
  const result = await db.query<JobPageRow>(
    'select page_number, name, blob_key, sha256, completed, result_key, line_count from job_pages where job_id = $1 order by page_number',
    [jobId],
  );
  return result.rows;
}
