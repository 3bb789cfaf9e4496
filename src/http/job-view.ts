// The status body of a job, from the job_status projection (docs/contract.md): every
// documented field always present (null where not known), result_url only when done.

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
  JOB_STATUS_COLUMNS.split(',').map((column) => `${alias}.${column.trim()}`).join(', ');

export const statusUrl = (baseUrl: string, jobId: string): string => `${baseUrl}/v1/process-scan/${jobId}`;
export const resultUrl = (baseUrl: string, jobId: string): string => `${baseUrl}/v1/process-scan/${jobId}/result`;

export function jobStatusBody(row: JobStatusRow, baseUrl: string) {
  const body: Record<string, unknown> = {
    job_id: row.job_id,
    state: row.state,
    page_count: row.page_count,
    pages_done: row.pages_done,
    current_step: row.current_step,
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    finished_at: row.finished_at?.toISOString() ?? null,
    expires_at: row.expires_at.toISOString(),
    error_message: row.error_message,
    warning_message: row.warning_message,
    status_url: statusUrl(baseUrl, row.job_id),
  };
  if (row.state === 'done') body.result_url = resultUrl(baseUrl, row.job_id);
  body.callback = row.options.webhookUrl
    ? {
        state: row.callback_state ?? 'waiting',
        attempts: row.callback_attempts,
        last_status: row.callback_last_status,
        next_attempt_at: row.callback_next_attempt_at?.toISOString() ?? null,
      }
    : null;
  return body;
}
