// The callback payload: the spec's fields plus the additive ones of docs/contract.md.
import type { CallbackDelivery, JobState } from '../../../domain/job.ts';

export interface CallbackPayload {
  job_id: string;
  state: 'done' | 'failed';
  page_count: number;
  result_url?: string;
  error_message?: string | null;
  event_id: string;
  event: 'job.completed' | 'job.failed';
  sent_at: string;
}

export function callbackBody(state: JobState, baseUrl: string, now: Date): CallbackPayload {
  const delivery = state.callback;
  if (!delivery || (state.status !== 'done' && state.status !== 'failed')) throw new Error('job has no callback to send');
  const payload: CallbackPayload = {
    job_id: state.jobId,
    state: state.status,
    page_count: state.pageCount,
    event_id: delivery.deliveryId,
    event: delivery.event,
    sent_at: now.toISOString(),
  };
  if (state.status === 'done') payload.result_url = `${baseUrl}/v1/process-scan/${state.jobId}/result`;
  if (state.status === 'failed') payload.error_message = state.errorMessage;
  return payload;
}

export function isTerminalCallbackState(state: CallbackDelivery['state']): boolean {
  return state === 'delivered' || state === 'abandoned';
}
