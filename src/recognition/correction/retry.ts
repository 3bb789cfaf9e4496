// Retries of provider calls: 408, 429, 5xx, timeouts and connection failures are
// transient; anything else (bad key, unknown model, bad request) is not. Backoff
// doubles from `baseDelayMs` with jitter, unless the provider says how long to
// wait (Retry-After / retry-after-ms), which is then honoured exactly. A wait
// longer than `maxWaitMs` is not worth holding a page task for: retries end.
import { setTimeout as sleep } from 'node:timers/promises';

export class ProviderError extends Error {
  readonly transient: boolean;
  /** HTTP status, null for timeouts and connection failures. */
  readonly status: number | null;
  /** How long the provider asked us to wait, when it said. */
  readonly retryAfterMs: number | null;

  constructor(message: string, options: { transient: boolean; status?: number | null; retryAfterMs?: number | null; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'ProviderError';
    this.transient = options.transient;
    this.status = options.status ?? null;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }
}

export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Milliseconds from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(headers: Headers | null | undefined, now: number = Date.now()): number | null {
  if (!headers) return null;
  const milliseconds = headers.get('retry-after-ms');
  if (milliseconds !== null && /^\d+(\.\d+)?$/.test(milliseconds.trim())) return Math.ceil(Number(milliseconds));
  const value = headers.get('retry-after')?.trim();
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

export interface RetryPolicy {
  retries: number;
  baseDelayMs: number;
  maxWaitMs: number;
}

export interface RetryOutcomeError {
  error: ProviderError;
  attempts: number;
  /** Why the retries ended. */
  reason: 'not retryable' | 'retries exhausted' | 'wait too long' | 'out of time';
}

export class RetriesEnded extends Error {
  readonly error: ProviderError;
  readonly attempts: number;
  readonly reason: RetryOutcomeError['reason'];

  constructor(outcome: RetryOutcomeError) {
    super(`${outcome.error.message} (${outcome.reason} after ${outcome.attempts} attempt${outcome.attempts === 1 ? '' : 's'})`, {
      cause: outcome.error,
    });
    this.name = 'RetriesEnded';
    this.error = outcome.error;
    this.attempts = outcome.attempts;
    this.reason = outcome.reason;
  }
}

export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = policy.baseDelayMs * 2 ** retry;
  // "Equal jitter": at least half the exponential delay, so retries never bunch up at zero.
  return Math.min(policy.maxWaitMs, Math.round(ceiling / 2 + (random() * ceiling) / 2));
}

/** A call with less time than this before the deadline is not started. */
export const MIN_CALL_MS = 1_000;

/**
 * Runs `call` until it succeeds, a non-transient ProviderError, or the policy ends
 * the retries (then throws RetriesEnded). Other errors propagate unchanged; an
 * abort of `signal` during a wait rejects with the signal's reason. With a `deadline`
 * (epoch ms), no call starts with less than MIN_CALL_MS left and no wait ends past it:
 * the retries end 'out of time'; `call` gets the milliseconds left, to bound its own wait.
 */
export async function withRetry<T>(
  call: (attempt: number, msLeft: number) => Promise<T>,
  policy: RetryPolicy,
  signal: AbortSignal,
  onRetry?: (info: { attempt: number; waitMs: number; error: ProviderError }) => void,
  deadline = Number.POSITIVE_INFINITY,
): Promise<T> {
  let failed: ProviderError | null = null;
  for (let attempt = 1; ; attempt++) {
    const msLeft = deadline - Date.now();
    if (msLeft < MIN_CALL_MS) {
      const error = failed ?? new ProviderError("no time left before the page task's expiry", { transient: true });
      throw new RetriesEnded({ error, attempts: attempt - 1, reason: 'out of time' });
    }
    try {
      return await call(attempt, msLeft);
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      failed = error;
      if (!error.transient) throw new RetriesEnded({ error, attempts: attempt, reason: 'not retryable' });
      if (attempt > policy.retries) throw new RetriesEnded({ error, attempts: attempt, reason: 'retries exhausted' });
      const waitMs = error.retryAfterMs ?? backoffDelay(attempt - 1, policy);
      if (waitMs > policy.maxWaitMs) throw new RetriesEnded({ error, attempts: attempt, reason: 'wait too long' });
      if (Date.now() + waitMs + MIN_CALL_MS > deadline) throw new RetriesEnded({ error, attempts: attempt, reason: 'out of time' });
      onRetry?.({ attempt, waitMs, error });
      await sleep(waitMs, undefined, { signal }).catch((error: unknown) => {
        throw signal.aborted ? signal.reason : error;
      });
    }
  }
}
