// The status body of a job, from the job_status projection (docs/contract.md): every
// documented field always present (null where not known), result_url only when done.
import type { JobStatusRow } from '../../projections/job-status.ts';

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
        // No callback is sent for a cancelled job (the specification's events are done and failed).
        state: row.callback_state ?? (row.state === 'cancelled' ? 'not_sent' : 'waiting'),
        attempts: row.callback_attempts,
        last_status: row.callback_last_status,
        next_attempt_at: row.callback_next_attempt_at?.toISOString() ?? null,
      }
    : null;
  return body;
}
