// The correction step's settings, given to createCorrector by whoever runs it (the service reads
// them from the environment in src/platform/config.ts). Kept apart from the providers so that reading
// them loads no provider SDK.

import type { LlmTier } from '../../shared/job-options.ts';
import type { EvidenceGuardSettings, SupportedPageBounds } from './line-evidence.ts';

export type { SupportedPageBounds };

export const CORRECTION_PROVIDERS = ['gemini', 'openai'] as const;
export type CorrectionProviderName = (typeof CORRECTION_PROVIDERS)[number];

/** Provider answers one page's correction may ask for (a malformed answer is asked again once). */
export const CORRECTION_ANSWER_ROUNDS = 2;

export interface CorrectionSettings {
  /** The provider correction uses; null: none configured (the step is skipped with a warning). */
  provider: CorrectionProviderName | null;
  geminiApiKey: string | null;
  geminiBaseUrl: string | null;
  openaiBaseUrl: string | null;
  openaiApiKey: string | null;
  /** Model per tier; the openai ones are all set whenever OPENAI_BASE_URL is. */
  models: { gemini: Record<'cheap' | 'balanced' | 'best', string>; openai: Record<'cheap' | 'balanced' | 'best', string | null> };
  /** Whether the `best` tier sends the page image (off for openai: many self-hosted models read text only). */
  bestTierImage: { gemini: boolean; openai: boolean };
  /** With lineGuard 'edit-ratio': a corrected line farther than this edit-distance ratio from the recognised text is refused. */
  maxEditRatio: number;
  /** How each changed line is judged (docs/correction.md, "Guards"). */
  lineGuard: LineGuardSettings;
  /** One provider call (one attempt). */
  timeoutMs: number;
  /** Retries after a 429, 5xx, timeout or connection failure. */
  retries: number;
  /** First backoff delay; doubles per retry (with jitter) unless the provider sends Retry-After. */
  retryBaseMs: number;
  /** Longest wait between attempts; a Retry-After beyond it ends the retries at once. */
  maxRetryWaitMs: number;
}

/**
 * How each changed line is judged: 'evidence' by the line's image (line-evidence.ts), per tier (the
 * `best` tier's `bestWithImage` when it sends the page image); 'edit-ratio' by its distance to the
 * recognised text alone (maxEditRatio), the guard before the evidence guard.
 */
export type LineGuardSettings =
  | { kind: 'edit-ratio' }
  | { kind: 'evidence'; tiers: Record<LlmTier | 'bestWithImage', EvidenceGuardSettings> };

/**
 * The evidence guard's thresholds, chosen by bench/correction-guards.ts on the tune half of the
 * htr-pages val documents, stratified by difficulty (ADR 0046; docs/correction.md, "Guards"): the
 * most loss per character any tier takes. The length of a dropped run is not bounded (Infinity):
 * the ink it held is. On a page the image supports, the loss per character is not bounded either
 * (ADR 0047): the loss per character edited and the dropped ink are, the ink by the line bound (ADR
 * 0048: a looser one, as its grid chose, let a model that drops words make a page 3.38 points worse).
 */
export const EVIDENCE_GUARD: EvidenceGuardSettings = {
  maxLossPerChar: 2,
  confidenceSlack: 0,
  maxLossPerEdit: 6,
  framelessMaxEditRatio: 0,
  maxDroppedRun: Number.POSITIVE_INFINITY,
  maxDroppedInk: 10,
  supportedPage: { minShare: 0.5, maxLossPerChar: Number.POSITIVE_INFINITY, confidenceSlack: 0, maxLossPerEdit: 6, maxDroppedInk: 10 },
};

export function evidenceGuard(base: EvidenceGuardSettings, bestWithImage: EvidenceGuardSettings = base): LineGuardSettings {
  return { kind: 'evidence', tiers: { cheap: base, balanced: base, best: base, bestWithImage } };
}
