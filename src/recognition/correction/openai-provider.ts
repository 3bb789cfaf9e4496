// OpenAI-compatible chat completions (vLLM, Ollama, llama.cpp server, …) through
// the `openai` package, with a strict JSON-schema response format. The SDK's own
// retries stay off: retry.ts retries, honouring Retry-After.
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionContentPart, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { LlmTier } from '../../../domain/events.ts';
import { ANSWER_SCHEMA } from './prompt.ts';
import { describeCause, withTimeout, type CorrectionProvider, type ProviderRequest, type ProviderResponse } from './provider.ts';
import { isTransientStatus, ProviderError, retryAfterMs } from './retry.ts';

export interface OpenAiProviderOptions {
  baseUrl: string;
  /** Many self-hosted servers need none. */
  apiKey: string | null;
  models: Record<LlmTier, string>;
  /** Whether the `best` tier sends the page image (the model must accept images). */
  bestTierImage: boolean;
}

export class OpenAiProvider implements CorrectionProvider {
  readonly name = 'openai';
  private readonly options: OpenAiProviderOptions;
  private readonly client: OpenAI;

  constructor(options: OpenAiProviderOptions) {
    this.options = options;
    // The SDK refuses to start without a key; servers that need none ignore it. Organization
    // and project are explicit so that OPENAI_ORG_ID / OPENAI_PROJECT_ID in the environment
    // add no headers behind config.ts's back.
    this.client = new OpenAI({
      baseURL: options.baseUrl,
      apiKey: options.apiKey ?? 'none',
      organization: null,
      project: null,
      maxRetries: 0,
    });
  }

  modelFor(tier: LlmTier): string {
    return this.options.models[tier];
  }

  sendsImage(tier: LlmTier): boolean {
    return tier === 'best' && this.options.bestTierImage;
  }

  async complete(request: ProviderRequest): Promise<ProviderResponse> {
    const content: ChatCompletionContentPart[] = [{ type: 'text', text: request.prompt.user }];
    if (request.image) {
      content.push({
        type: 'image_url',
        image_url: { url: `data:${request.image.mimeType};base64,${request.image.data.toString('base64')}` },
      });
    }
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: request.prompt.system },
      { role: 'user', content: request.image ? content : request.prompt.user },
    ];
    const completion = await withTimeout(
      request.signal,
      request.timeoutMs,
      (signal) =>
        this.client.chat.completions.create(
          {
            model: request.model,
            messages,
            temperature: 0,
            response_format: {
              type: 'json_schema',
              json_schema: { name: 'corrected_lines', strict: true, schema: ANSWER_SCHEMA as unknown as Record<string, unknown> },
            },
          },
          // Our signal enforces the limit; the SDK's own timeout (default 10 min) only backs it up.
          { signal, timeout: request.timeoutMs + 5_000 },
        ),
      toProviderError,
    );
    const choice = completion.choices?.[0];
    const refused = typeof choice?.message?.refusal === 'string' && choice.message.refusal !== '';
    return {
      text: refused ? null : (choice?.message?.content ?? null),
      finishReason: refused ? 'refusal' : (choice?.finish_reason ?? null),
      inputTokens: completion.usage?.prompt_tokens ?? 0,
      outputTokens: completion.usage?.completion_tokens ?? 0,
    };
  }
}

function toProviderError(error: unknown): ProviderError {
  if (error instanceof APIError && typeof error.status === 'number') {
    return new ProviderError(`openai-compatible server answered HTTP ${error.status}`, {
      transient: isTransientStatus(error.status),
      status: error.status,
      retryAfterMs: retryAfterMs(error.headers),
      cause: error,
    });
  }
  // Connection refused/reset, the SDK's own timeout, an unreadable body.
  return new ProviderError(`openai-compatible request failed: ${describeCause(error)}`, { transient: true, cause: error });
}
