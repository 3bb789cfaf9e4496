// Delivers the signed callback of a finished job, one attempt per task. Each
// attempt is recorded as an event, whose reaction schedules the next attempt.
import type { Job } from '../../queue/boss.ts';
import { redactUrl } from '../../shared/redact-url.ts';
import { sendCallback, type CallbackOutcome } from '../../callbacks/send-callback.ts';
import type { CommandBus } from '../../use-cases/command-bus.ts';
import { findWebhookSecret } from '../../use-cases/accounts/sql/find-webhook-secret.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { isTerminalCallbackState, callbackBody } from './callback-body.ts';
import type { CallbackTaskData } from '../../queue/queues.ts';
import { isJobEnded } from '../mechanics/task-errors.ts';
import { Rejection } from '../../../domain/rejections.ts';

export interface CallbackWorkerDeps {
  bus: CommandBus;
  config: Config;
  log: Logger;
}

export function createCallbackHandler(deps: CallbackWorkerDeps) {
  return async (task: Job<CallbackTaskData>): Promise<void> => {
    const { jobId, attempt } = task.data;
    const log = deps.log.child({ job_id: jobId, attempt });
    const state = await deps.bus.loadJob(deps.bus.db.pool, jobId);
    const delivery = state.callback;
    if (!delivery || isTerminalCallbackState(delivery.state) || attempt <= delivery.attempts || !state.options?.webhookUrl) return;

    const accountSecret = await findWebhookSecret(deps.bus.db.pool, state.accountId);
    const body = Buffer.from(JSON.stringify(callbackBody(state, deps.config.baseUrl, new Date())));
    // Never signed with an empty key (anyone could forge that signature): the attempt fails, and
    // the delivery is retried on its schedule (`hwr accounts rotate-secret` gives the account one).
    const outcome: CallbackOutcome = accountSecret
      ? await sendCallback({
          url: state.options.webhookUrl,
          body,
          secret: accountSecret,
          event: delivery.event,
          deliveryId: delivery.deliveryId,
          timeoutMs: deps.config.callbacks.timeoutMs,
          allowHttp: deps.config.callbacks.allowHttp,
          allowPrivate: deps.config.callbacks.allowPrivate,
        })
      : { ok: false, status: null, error: 'the account has no webhook secret: not sent unsigned', durationMs: 0 };
    // The URL redacted (its query string may be a token); the event below keeps it whole.
    (outcome.ok ? log.info.bind(log) : log.warn.bind(log))(
      {
        ok: outcome.ok,
        http_status: outcome.status,
        error: outcome.error,
        setting: outcome.setting,
        webhook_url: redactUrl(state.options.webhookUrl),
      },
      'callback attempt',
    );
    await recordCallbackAttempt(deps, jobId, attempt, state.options.webhookUrl, {
      ok: outcome.ok,
      httpStatus: outcome.status,
      error: outcome.error,
      durationMs: Math.round(outcome.durationMs),
      causationId: task.id,
    });
  };
}

/**
 * Records one delivery attempt (its reaction schedules the next one); nothing when the delivery
 * or the job has already ended meanwhile.
 */
export async function recordCallbackAttempt(
  deps: { bus: CommandBus; config: Config },
  jobId: string,
  attempt: number,
  url: string,
  outcome: { ok: boolean; httpStatus: number | null; error: string | null; durationMs: number; causationId: string },
): Promise<void> {
  try {
    await deps.bus.job(
      jobId,
      {
        type: 'RecordCallbackAttempt',
        attempt,
        url,
        ok: outcome.ok,
        httpStatus: outcome.httpStatus,
        error: outcome.error,
        durationMs: outcome.durationMs,
        now: new Date(),
        retryScale: deps.config.callbacks.retryScale,
      },
      { actor: 'worker', causationId: outcome.causationId },
    );
  } catch (error) {
    if (error instanceof Rejection && error.code === 'no_callback') return;
    if (!isJobEnded(error)) throw error;
  }
}
