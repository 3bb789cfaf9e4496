// The correction step with a model provider: one structured call per page,
// guarded, retried, and never fatal to the job (see docs/correction.md).
import type { Logger } from 'pino';
import type { CorrectionInfo, PageResult, TextLine } from '../page/page-result.ts';
import { allLines } from '../page/page-result.ts';
import type { CorrectionInput, PageCorrector } from './corrector.ts';
import { checkAnswer, checkLineEdit, normalizeLineText, type LineVerdict } from './guards.ts';
import { checkPageEvidence } from './line-evidence.ts';
import type { LineFrames } from '../decoding/ctc-score.ts';
import type { LlmTier } from '../../shared/job-options.ts';
import { pageImageOf, type PageImage } from './page-image.ts';
import { DEFAULT_PRESET, isPreset, type Preset } from './presets.ts';
import { buildPrompt } from './prompt.ts';
import type { CorrectionProvider, ProviderResponse } from './provider.ts';
import { RetriesEnded, withRetry, type RetryPolicy } from './retry.ts';
import { realignWords } from './realign-words.ts';
import { CORRECTION_ANSWER_ROUNDS, type LineGuardSettings } from './settings.ts';
import type { PageTurn } from '../reading/page-turn.ts';

export interface LlmCorrectorSettings {
  maxEditRatio: number;
  lineGuard: LineGuardSettings;
  timeoutMs: number;
  retry: RetryPolicy;
}

/** Calls per page when the answer is malformed: the first, and one retry (src/platform/config.ts checks the worst case). */
const ANSWER_ROUNDS = CORRECTION_ANSWER_ROUNDS;

export class LlmCorrector implements PageCorrector {
  private readonly provider: CorrectionProvider;
  private readonly settings: LlmCorrectorSettings;

  constructor(provider: CorrectionProvider, settings: LlmCorrectorSettings) {
    this.provider = provider;
    this.settings = settings;
  }

  async correct(page: PageResult, input: CorrectionInput): Promise<PageResult> {
    input.signal.throwIfAborted();
    if (allLines(page).length === 0) return page;
    const started = performance.now();
    const result = structuredClone(page);
    const lines = allLines(result);
    const tier = input.options.llmTier;
    const model = this.provider.modelFor(tier);
    const preset = resolvePreset(input.options.preset, input.log);
    const image = this.provider.sendsImage(tier) ? await pageImage(input, page.orientation ?? 0) : null;
    const prompt = buildPrompt(lines, preset, image !== null);
    const usage = { inputTokens: 0, outputTokens: 0 };
    const log = input.log.child({ provider: this.provider.name, model, tier, preset });
    const finish = (outcome: NonNullable<CorrectionInfo['outcome']>, refusedLines: CorrectionInfo['refusedLines'] = []): PageResult => {
      result.correction = { provider: this.provider.name, model, refusedLines, ...usage, outcome };
      log.info(
        { outcome, ...usage, refused_lines: refusedLines.length, image: image !== null, ms: Math.round(performance.now() - started) },
        'page correction finished',
      );
      return result;
    };

    let problem = '';
    for (let round = 1; round <= ANSWER_ROUNDS; round++) {
      let response: ProviderResponse;
      try {
        response = await withRetry(
          (_attempt, msLeft) =>
            this.provider.complete({ model, prompt, image, signal: input.signal, timeoutMs: Math.min(this.settings.timeoutMs, msLeft) }),
          this.settings.retry,
          input.signal,
          ({ attempt, waitMs, error }) =>
            log.warn({ attempt, wait_ms: waitMs, status: error.status, err: error.message }, 'correction call failed; retrying'),
          input.deadline,
        );
      } catch (error) {
        if (!(error instanceof RetriesEnded)) throw error;
        log.warn({ err: error.message, attempts: error.attempts, reason: error.reason }, 'correction provider unavailable');
        result.warnings.push(`correction unavailable: ${error.message}; the recognised text was kept`);
        return finish('unavailable');
      }
      usage.inputTokens += response.inputTokens;
      usage.outputTokens += response.outputTokens;
      const check = checkAnswer(
        response,
        lines.map((line) => line.id),
      );
      if (check.ok) {
        const judge = this.lineJudge(tier, image !== null, input.lineFrames);
        return finish('applied', applyCorrections(lines, check.texts, judge));
      }
      problem = check.problem;
      log.warn({ round, problem }, 'correction answer refused');
    }
    result.warnings.push(`correction rejected: ${problem} (${ANSWER_ROUNDS} answers refused); the recognised text was kept`);
    return finish('rejected');
  }

  /**
   * The line guard for this page: by the lines' frames where recognition kept them (lines without:
   * framelessMaxEditRatio; a page the image supports: looser bounds, checkPageEvidence); by
   * maxEditRatio when the guard is 'edit-ratio' or the page has no frames.
   */
  private lineJudge(tier: LlmTier, withImage: boolean, frames: ReadonlyMap<string, LineFrames> | undefined): PageJudge {
    const guard = this.settings.lineGuard;
    // A page without frames (corrected from a stored result, not after its recognition) has no image evidence at all.
    if (guard.kind === 'edit-ratio' || !frames || frames.size === 0)
      return (lines, proposed) =>
        new Map(
          lines
            .filter((line) => proposed.has(line.id))
            .map((line) => [line.id, checkLineEdit(line.text, proposed.get(line.id) as string, this.settings.maxEditRatio)]),
        );
    const settings = guard.tiers[tier === 'best' && withImage ? 'bestWithImage' : tier];
    return (lines, proposed) => checkPageEvidence(lines, proposed, frames, settings);
  }
}

/** The verdicts on a page's changed lines (`proposed`: line id to its corrected text). */
type PageJudge = (lines: readonly TextLine[], proposed: ReadonlyMap<string, string>) => Map<string, LineVerdict>;

/** Applies accepted line texts in place; returns the lines a guard refused. */
function applyCorrections(lines: TextLine[], texts: Map<string, string>, judge: PageJudge): CorrectionInfo['refusedLines'] {
  const proposed = new Map<string, string>();
  for (const line of lines) {
    const text = normalizeLineText(texts.get(line.id) ?? line.text);
    if (text !== normalizeLineText(line.text)) proposed.set(line.id, text);
  }
  const verdicts = judge(lines, proposed);
  const refused: CorrectionInfo['refusedLines'] = [];
  for (const line of lines) {
    const text = proposed.get(line.id);
    const verdict = verdicts.get(line.id);
    if (text === undefined || !verdict) continue;
    if (!verdict.accept) {
      refused.push({ id: line.id, reason: verdict.reason });
      continue;
    }
    line.words = realignWords(line, text);
    line.recognizedText ??= line.text;
    line.text = text;
  }
  return refused;
}

function resolvePreset(name: string, log: Logger): Preset {
  if (isPreset(name)) return name;
  // The intake refuses unknown presets; this is a job from before a preset was removed.
  log.warn({ preset: name }, `unknown correction preset; using ${DEFAULT_PRESET}`);
  return DEFAULT_PRESET;
}

async function pageImage(input: CorrectionInput, turn: PageTurn): Promise<PageImage | null> {
  try {
    const load = async () => pageImageOf(await input.pageImage.read(), turn);
    return await (input.admitDecode ? input.admitDecode(load) : load());
  } catch (error) {
    // What the source calls the task's to ride out (the store away: the task runs again) is no reason to correct blind.
    if (input.pageImage.ridesOut(error)) throw error;
    input.log.warn(
      { err: error instanceof Error ? error.message : String(error), blob_key: input.pageImage.key },
      'page image unreadable; correcting from text only',
    );
    return null;
  }
}
