// What llm-corrector.ts needs from a model provider: one structured-output call.
// Providers turn every transport failure into a ProviderError (retry.ts decides
// what to retry) and let a cancellation of the job propagate as an abort.
import type { LlmTier } from '../../../domain/events.ts';
import type { PageImage } from './page-image.ts';
import type { CorrectionPrompt } from './prompt.ts';
import { ProviderError } from './retry.ts';

export interface ProviderRequest {
  model: string;
  prompt: CorrectionPrompt;
  image: PageImage | null;
  /** The job's signal: aborted on cancellation or shutdown. */
  signal: AbortSignal;
  /** Limit for this one call. */
  timeoutMs: number;
}

export interface ProviderResponse {
  /** The model's text output (the JSON answer), null when it returned none. */
  text: string | null;
  finishReason: string | null;
  inputTokens: number;
  /** Output tokens billed, thinking tokens included. */
  outputTokens: number;
}

export interface CorrectionProvider {
  readonly name: 'gemini' | 'openai';
  modelFor(tier: LlmTier): string;
  /** Whether this tier sends the page image along with the lines. */
  sendsImage(tier: LlmTier): boolean;
  complete(request: ProviderRequest): Promise<ProviderResponse>;
}

/**
 * Runs `call` with a signal that aborts on the job's signal or after `timeoutMs`.
 * A timeout becomes a transient ProviderError; a job abort rethrows its reason.
 */
export async function withTimeout<T>(
  signal: AbortSignal,
  timeoutMs: number,
  call: (attemptSignal: AbortSignal) => Promise<T>,
  toProviderError: (error: unknown) => ProviderError,
): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await call(AbortSignal.any([signal, timeout]));
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (timeout.aborted) throw new ProviderError(`no answer within ${timeoutMs} ms`, { transient: true, cause: error });
    throw error instanceof ProviderError ? error : toProviderError(error);
  }
}

export function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
