// Picks the correction step from its settings: gemini, an OpenAI-compatible
// server, or none (pages keep their recognised text, with a warning).
import type { PageResult } from '../page/page-result.ts';
import type { CorrectionInput, PageCorrector } from './corrector.ts';
import { GeminiProvider } from './gemini-provider.ts';
import { LlmCorrector } from './llm-corrector.ts';
import { OpenAiProvider } from './openai-provider.ts';
import type { CorrectionProvider } from './provider.ts';
import type { CorrectionSettings } from './settings.ts';

export const NO_PROVIDER_WARNING = 'correction skipped: no correction provider is configured';

export function createCorrector(config: CorrectionSettings): PageCorrector {
  const provider = createProvider(config);
  if (provider === null) return new NoProviderCorrector();
  return new LlmCorrector(provider, {
    maxEditRatio: config.maxEditRatio,
    lineGuard: config.lineGuard,
    timeoutMs: config.timeoutMs,
    retry: { retries: config.retries, baseDelayMs: config.retryBaseMs, maxWaitMs: config.maxRetryWaitMs },
  });
}

export function createProvider(config: CorrectionSettings): CorrectionProvider | null {
  if (config.provider === 'gemini' && config.geminiApiKey) {
    return new GeminiProvider({
      apiKey: config.geminiApiKey,
      baseUrl: config.geminiBaseUrl,
      models: config.models.gemini,
      bestTierImage: config.bestTierImage.gemini,
    });
  }
  if (config.provider === 'openai' && config.openaiBaseUrl) {
    const { cheap, balanced, best } = config.models.openai;
    if (!cheap || !balanced || !best) throw new Error('OPENAI_BASE_URL is set without a model for every tier');
    return new OpenAiProvider({
      baseUrl: config.openaiBaseUrl,
      apiKey: config.openaiApiKey,
      models: { cheap, balanced, best },
      bestTierImage: config.bestTierImage.openai,
    });
  }
  return null;
}

/** No provider configured: the page is returned as recognised, with a warning; the job still ends done. */
export class NoProviderCorrector implements PageCorrector {
  async correct(page: PageResult, input: CorrectionInput): Promise<PageResult> {
    input.signal.throwIfAborted();
    return { ...page, warnings: [...page.warnings, NO_PROVIDER_WARNING] };
  }
}
