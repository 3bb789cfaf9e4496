// Gemini through @google/genai (generateContent with a JSON response schema).
// The SDK's own retries stay off (retry.ts retries, honouring Retry-After); its
// ApiError carries no headers, so a fetch wrapper reads Retry-After.
import { ApiError, GoogleGenAI, type Part } from '@google/genai';
import type { LlmTier } from '../../../domain/events.ts';
import { ANSWER_SCHEMA } from './prompt.ts';
import { describeCause, withTimeout, type CorrectionProvider, type ProviderRequest, type ProviderResponse } from './provider.ts';
import { isTransientStatus, ProviderError, retryAfterMs } from './retry.ts';

export const GEMINI_DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com/';

export interface GeminiProviderOptions {
  apiKey: string;
  /** null: Google's endpoint. */
  baseUrl: string | null;
  models: Record<LlmTier, string>;
  /** Whether the `best` tier sends the page image. */
  bestTierImage: boolean;
}

export class GeminiProvider implements CorrectionProvider {
  readonly name = 'gemini';
  private readonly options: GeminiProviderOptions;

  constructor(options: GeminiProviderOptions) {
    this.options = options;
  }

  modelFor(tier: LlmTier): string {
    return this.options.models[tier];
  }

  sendsImage(tier: LlmTier): boolean {
    return tier === 'best' && this.options.bestTierImage;
  }

  async complete(request: ProviderRequest): Promise<ProviderResponse> {
    let retryAfter: number | null = null;
    const client = new GoogleGenAI({
      apiKey: this.options.apiKey,
      // Explicit, so that no GOOGLE_GENAI_USE_VERTEXAI / GOOGLE_GEMINI_BASE_URL in the
      // environment redirects the call behind config.ts's back.
      vertexai: false,
      httpOptions: {
        baseUrl: this.options.baseUrl ?? GEMINI_DEFAULT_BASE_URL,
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if (!response.ok) retryAfter = retryAfterMs(response.headers);
          return response;
        },
      },
    });
    const parts: Part[] = [];
    if (request.image) parts.push({ inlineData: { mimeType: request.image.mimeType, data: request.image.data.toString('base64') } });
    parts.push({ text: request.prompt.user });

    const response = await withTimeout(
      request.signal,
      request.timeoutMs,
      (abortSignal) =>
        client.models.generateContent({
          model: request.model,
          contents: [{ role: 'user', parts }],
          config: {
            systemInstruction: request.prompt.system,
            responseMimeType: 'application/json',
            responseJsonSchema: ANSWER_SCHEMA,
            temperature: 0,
            abortSignal,
          },
        }),
      (error) => toProviderError(error, retryAfter),
    );

    const candidate = response.candidates?.[0];
    const textParts = (candidate?.content?.parts ?? []).filter((part) => typeof part.text === 'string' && !part.thought);
    const blocked = response.promptFeedback?.blockReason;
    const usage = response.usageMetadata;
    return {
      text: textParts.length > 0 ? textParts.map((part) => part.text).join('') : null,
      finishReason: candidate?.finishReason ?? (blocked ? `blocked: ${blocked}` : null),
      inputTokens: usage?.promptTokenCount ?? 0,
      outputTokens: (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0),
    };
  }
}

function toProviderError(error: unknown, retryAfter: number | null): ProviderError {
  if (error instanceof ApiError) {
    return new ProviderError(`gemini answered HTTP ${error.status}`, {
      transient: isTransientStatus(error.status),
      status: error.status,
      retryAfterMs: retryAfter,
      cause: error,
    });
  }
  return new ProviderError(`gemini request failed: ${describeCause(error)}`, { transient: true, cause: error });
}
