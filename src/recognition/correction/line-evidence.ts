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
 * where the recognizer writes them).
 */
export function droppedCharacters(frames: LineFrames, recognised: string, corrected: string): { dropped: number; longestRun: number } {
  const before = ctcAlignment(frames, recognised);
  const after = ctcAlignment(frames, corrected);
  if (!before || !after) return { dropped: 0, longestRun: 0 };
  const kept = new Uint8Array(before.labels);
  before.path.forEach((label, t) => {
    if (label >= 0 && after.path[t] >= 0) kept[label] = 1;
  });
  let dropped = 0;
  let run = 0;
  let longestRun = 0;
  for (const one of kept) {
    run = one ? 0 : run + 1;
    if (!one) dropped += 1;
    longestRun = Math.max(longestRun, run);
  }
  return { dropped, longestRun };
}

/** The most loss per character a line of this confidence may take. */
export function allowedLoss(confidence: number, settings: EvidenceGuardSettings): number {
  return settings.maxLossPerChar + settings.confidenceSlack * Math.max(0, 1 - confidence);
}

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
  if (frames) {
    const evidence = lineEvidence(frames, line.text, corrected);
    if (evidence.unknown * 3 <= evidence.characters) {
      const allowed = allowedLoss(line.confidence, settings);
      if (evidence.lossPerChar > allowed) {
        const loss = Number.isFinite(evidence.lossPerChar) ? evidence.lossPerChar.toFixed(2) : 'all';
        return { accept: false, reason: `image likelihood lost ${loss} per character, over ${allowed.toFixed(2)}` };
      }
      if (evidence.lossPerEdit > settings.maxLossPerEdit) {
        return {
          accept: false,
          reason: `image likelihood lost ${evidence.lossPerEdit.toFixed(2)} per character edited, over ${settings.maxLossPerEdit}`,
        };
      }
      if (Number.isFinite(settings.maxDroppedRun)) {
        const { longestRun } = droppedCharacters(frames, line.text, corrected);
        if (longestRun > settings.maxDroppedRun)
          return { accept: false, reason: `${longestRun} recognised characters in a row left unexplained, over ${settings.maxDroppedRun}` };
      }
      return { accept: true };
    }
  }
  if (editDistance(line.text, corrected) <= 1) return { accept: true };
  const ratio = editRatio(line.text, corrected);
  if (ratio <= settings.framelessMaxEditRatio) return { accept: true };
  return {
    accept: false,
    reason: `edit ratio ${ratio.toFixed(2)} over ${settings.framelessMaxEditRatio} (no image evidence for the line)`,
  };
}
