// The per-line guard that asks the page, not our reading: does the line's image support the
// corrected text? The recognizer's output frames for the line (kept by recognition for the page,
// decoding/ctc-score.ts) give the CTC log-likelihood of any text; a correction is accepted when it
// loses little likelihood per character against the recognised text, however far it is from it,
// and refused when the image contradicts it, however close. Lines read with more leeway (low
// confidence) may lose more. Thresholds: docs/correction.md ("Guards"), chosen by
// bench/correction-guards.ts on half of the val pages.
import { ctcAlignment, ctcLogLikelihood, type LineFrames } from '../decoding/ctc-score.ts';
import { editDistance, editRatio } from './edit-distance.ts';
import type { LineVerdict } from './guards.ts';

export interface EvidenceGuardSettings {
  /** The most log-likelihood (nats) per character of the corrected text it may lose against the recognised text. */
  maxLossPerChar: number;
  /** Added to maxLossPerChar per unit of the line's doubt (1 - its confidence). */
  confidenceSlack: number;
  /**
   * The most log-likelihood it may lose per character edited (Levenshtein distance to the recognised
   * text): text dropped or added where the image shows none costs more per edit than a misreading undone.
   */
  maxLossPerEdit: number;
  /** Lines without frames (read in pieces, or by a recognizer of thousands of classes): the edit ratio they may change by. */
  framelessMaxEditRatio: number;
  /**
   * The most recognised characters in a row whose ink the corrected text may leave to blanks
   * (droppedCharacters): a truncated line drops its end in one run. Infinity: not checked.
   */
  maxDroppedRun: number;
  /**
   * The most ink one run of dropped recognised characters may hold (droppedCharacters' droppedInk,
   * ln). Infinity: not checked.
   */
  maxDroppedInk: number;
  /** Looser likelihood bounds on a page whose answer the image supports (checkPageEvidence); null: none. */
  supportedPage: SupportedPageBounds | null;
}

/**
 * A page whose answer the image supports: at least `minShare` of its changed lines that the frames
 * can judge pass the bounds above. Its lines those bounds refuse are judged again by these (the
 * length of a dropped run by the line bound): a model right on most of a page is right on its hard
 * lines more often than one the image contradicts throughout, and its hard lines are the ones our
 * reading got most wrong, whose true text the frames support least.
 */
export interface SupportedPageBounds {
  minShare: number;
  maxLossPerChar: number;
  confidenceSlack: number;
  maxLossPerEdit: number;
  /** The most ink one run of dropped recognised characters may hold on such a page. */
  maxDroppedInk: number;
}

export interface LineEvidence {
  /** ln P(text | frames) of the recognised and the corrected text. */
  recognised: number;
  corrected: number;
  /** (recognised - corrected) / characters of the corrected text; Infinity when the frames cannot hold it. */
  lossPerChar: number;
  /** (recognised - corrected) / the edit distance between them. */
  lossPerEdit: number;
  /** Characters of the corrected text the recognizer has no class for (scored as its likeliest character). */
  unknown: number;
  characters: number;
}

/** What the line's frames say of both texts. */
export function lineEvidence(frames: LineFrames, recognised: string, corrected: string): LineEvidence {
  const before = ctcLogLikelihood(frames, recognised);
  const after = ctcLogLikelihood(frames, corrected);
  const characters = Math.max(1, after.labels);
  const lossPerChar =
    after.logLikelihood === Number.NEGATIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : before.logLikelihood === Number.NEGATIVE_INFINITY
        ? Number.NEGATIVE_INFINITY
        : (before.logLikelihood - after.logLikelihood) / characters;
  const edits = Math.max(1, editDistance(recognised, corrected));
  const lossPerEdit = Number.isFinite(lossPerChar) ? (lossPerChar * characters) / edits : lossPerChar;
  return { recognised: before.logLikelihood, corrected: after.logLikelihood, lossPerChar, lossPerEdit, unknown: after.unknown, characters };
}

/**
 * Where along the line the corrected text leaves the recognised characters' ink unexplained: each
 * character of the recognised text takes some frames on its likeliest CTC path (the ink it was read
 * from); one whose frames all fall to blanks on the corrected text's likeliest path is dropped. A
 * truncated correction drops the characters at the line's end in a row, where a misreading undone
 * drops one here and there. `longestRun`: the most dropped characters in a row (spaces included
 * where the recognizer writes them). `droppedInk`: the most ink one run of dropped characters held,
 * summed over their frames as how much likelier their labels were there than a blank (ln): a word
 * written clearly and dropped weighs more than stray strokes read as text.
 */
export function droppedCharacters(
  frames: LineFrames,
  recognised: string,
  corrected: string,
): { dropped: number; longestRun: number; droppedInk: number } {
  const before = ctcAlignment(frames, recognised);
  const after = ctcAlignment(frames, corrected);
  if (!before || !after) return { dropped: 0, longestRun: 0, droppedInk: 0 };
  const kept = new Uint8Array(before.labels);
  const ink = new Float64Array(before.labels);
  before.path.forEach((label, t) => {
    if (label < 0) return;
    ink[label] += before.ink[t];
    if (after.path[t] >= 0) kept[label] = 1;
  });
  let dropped = 0;
  let run = 0;
  let runInk = 0;
  let longestRun = 0;
  let droppedInk = 0;
  kept.forEach((one, label) => {
    run = one ? 0 : run + 1;
    runInk = one ? 0 : runInk + ink[label];
    if (!one) dropped += 1;
    longestRun = Math.max(longestRun, run);
    droppedInk = Math.max(droppedInk, runInk);
  });
  return { dropped, longestRun, droppedInk };
}

/** The most loss per character a line of this confidence may take. */
export function allowedLoss(confidence: number, settings: Pick<EvidenceGuardSettings, 'maxLossPerChar' | 'confidenceSlack'>): number {
  return settings.maxLossPerChar + settings.confidenceSlack * Math.max(0, 1 - confidence);
}

type LineJudgement = { verdict: LineVerdict; judged: false } | { verdict: LineVerdict; judged: true; evidence: LineEvidence };

/**
 * The verdict on one changed line: by its frames where it has them and the recognizer can write
 * most of the corrected text; else by the edit ratio (a one-character change always passes).
 */
export function checkLineEvidence(
  line: { text: string; confidence: number },
  corrected: string,
  frames: LineFrames | undefined,
  settings: EvidenceGuardSettings,
): LineVerdict {
  return judgeLine(line, corrected, frames, settings).verdict;
}

/**
 * The verdicts on a page's changed lines (`proposed`: line id to corrected text): each line by
 * checkLineEvidence; then, on a page whose answer the image supports (settings.supportedPage), the
 * lines its frames judged and refused are judged again by the page's bounds.
 */
export function checkPageEvidence(
  lines: readonly { id: string; text: string; confidence: number }[],
  proposed: ReadonlyMap<string, string>,
  frames: ReadonlyMap<string, LineFrames>,
  settings: EvidenceGuardSettings,
): Map<string, LineVerdict> {
  const judgements = new Map<string, LineJudgement>();
  for (const line of lines) {
    const corrected = proposed.get(line.id);
    if (corrected !== undefined) judgements.set(line.id, judgeLine(line, corrected, frames.get(line.id), settings));
  }
  const judged = [...judgements.values()].filter((judgement) => judgement.judged);
  const accepted = judged.filter((judgement) => judgement.verdict.accept).length;
  const support = settings.supportedPage;
  const supported = support !== null && judged.length > 0 && accepted >= support.minShare * judged.length;
  const verdicts = new Map<string, LineVerdict>();
  for (const line of lines) {
    const judgement = judgements.get(line.id);
    if (!judgement) continue;
    let verdict = judgement.verdict;
    if (supported && judgement.judged && !verdict.accept) {
      const overLikelihood = likelihoodRefusal(judgement.evidence, line.confidence, support) !== null;
      const dropped = overLikelihood
        ? null
        : droppedCheck(frames.get(line.id) as LineFrames, line.text, proposed.get(line.id) as string, {
            maxDroppedRun: settings.maxDroppedRun,
            maxDroppedInk: support.maxDroppedInk,
          });
      // refused again: with the line bounds' reason, or the page's ink bound's where that is what refuses
      const refusal = overLikelihood ? verdict : dropped;
      if (refusal === null) verdict = { accept: true };
      else if (!refusal.accept)
        verdict = {
          accept: false,
          reason: `${refusal.reason}, and over the bounds of a page the image supports (${accepted} of its ${judged.length} lines pass)`,
        };
    }
    verdicts.set(line.id, verdict);
  }
  return verdicts;
}

function judgeLine(
  line: { text: string; confidence: number },
  corrected: string,
  frames: LineFrames | undefined,
  settings: EvidenceGuardSettings,
): LineJudgement {
  if (frames) {
    const evidence = lineEvidence(frames, line.text, corrected);
    if (evidence.unknown * 3 <= evidence.characters) {
      const reason = likelihoodRefusal(evidence, line.confidence, settings);
      if (reason !== null) return { verdict: { accept: false, reason }, judged: true, evidence };
      return { verdict: droppedCheck(frames, line.text, corrected, settings) ?? { accept: true }, judged: true, evidence };
    }
  }
  if (editDistance(line.text, corrected) <= 1) return { verdict: { accept: true }, judged: false };
  const ratio = editRatio(line.text, corrected);
  if (ratio <= settings.framelessMaxEditRatio) return { verdict: { accept: true }, judged: false };
  return {
    verdict: {
      accept: false,
      reason: `edit ratio ${ratio.toFixed(2)} over ${settings.framelessMaxEditRatio} (no image evidence for the line)`,
    },
    judged: false,
  };
}

/** Why the likelihood bounds (a line's, or a supported page's) refuse the line, or null where they let it through. */
function likelihoodRefusal(
  evidence: LineEvidence,
  confidence: number,
  bounds: Pick<EvidenceGuardSettings, 'maxLossPerChar' | 'confidenceSlack' | 'maxLossPerEdit'>,
): string | null {
  const allowed = allowedLoss(confidence, bounds);
  if (evidence.lossPerChar > allowed) {
    const loss = Number.isFinite(evidence.lossPerChar) ? evidence.lossPerChar.toFixed(2) : 'all';
    return `image likelihood lost ${loss} per character, over ${allowed.toFixed(2)}`;
  }
  if (evidence.lossPerEdit > bounds.maxLossPerEdit)
    return `image likelihood lost ${evidence.lossPerEdit.toFixed(2)} per character edited, over ${bounds.maxLossPerEdit}`;
  return null;
}

/** The refusal for ink the corrected text leaves unexplained (droppedCharacters), or null. */
function droppedCheck(
  frames: LineFrames,
  recognised: string,
  corrected: string,
  settings: Pick<EvidenceGuardSettings, 'maxDroppedRun' | 'maxDroppedInk'>,
): LineVerdict | null {
  if (!Number.isFinite(settings.maxDroppedRun) && !Number.isFinite(settings.maxDroppedInk)) return null;
  const { longestRun, droppedInk } = droppedCharacters(frames, recognised, corrected);
  if (longestRun > settings.maxDroppedRun)
    return { accept: false, reason: `${longestRun} recognised characters in a row left unexplained, over ${settings.maxDroppedRun}` };
  if (droppedInk > settings.maxDroppedInk)
    return {
      accept: false,
      reason: `recognised ink of ${droppedInk.toFixed(1)} left unexplained in a row, over ${settings.maxDroppedInk}`,
    };
  return null;
}
