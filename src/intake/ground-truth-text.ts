// The rules a ground-truth line's text and outline must pass to be trained on (docs/models.md,
// "Ground truth"; docs/decisions/0028-ground-truth-intake.md). Pure functions.
import type { Point } from '../recognition/page/page-result.ts';
import { boundingBox } from '../recognition/page/geometry.ts';

/** Shortest side of a line's box, in image pixels, that a line may have. */
export const MIN_LINE_SIDE_PX = 8;
/**
 * The recognizer reads a line scaled to 32 px high and emits one output frame per 2 px of the
 * scaled width (models/hwr-htr-v3), and CTC needs a frame per character: a line narrower than
 * `characters × height / 16` cannot be read whatever the training.
 */
export const FRAMES_PER_HEIGHT = 16;

export interface LineText {
  /** NFC, runs of white space as one space, trimmed, invisible formatting characters removed. */
  text: string;
  /** The distinct invisible formatting characters (Unicode Cf: soft hyphen, zero-width space, joiners, direction marks) removed. */
  invisible: string[];
  /** The distinct characters no model can learn: control characters, surrogates, unassigned code points, U+FFFD. */
  unlearnable: string[];
  /** The distinct private-use characters (MUFI's, for instance): learned as they are. */
  privateUse: string[];
}

// White space of every kind (JavaScript's \s: tab, line breaks, no-break and other spaces, BOM) and NEL.
const WHITE_SPACE = /[\s\u0085]+/gu;
const INVISIBLE = /\p{Cf}/gu;
const UNLEARNABLE = /[\p{Cc}\p{Cs}\p{Cn}\uFFFD]/gu;
const PRIVATE_USE = /\p{Co}/gu;

/** A line's transcription made ready to train on, with what was removed or cannot be learned. */
export function normaliseLineText(raw: string): LineText {
  const folded = raw.normalize('NFC').replace(WHITE_SPACE, ' ');
  const invisible = distinct(folded.match(INVISIBLE));
  const text = folded.replace(INVISIBLE, '').replace(/ {2,}/g, ' ').trim();
  return { text, invisible, unlearnable: distinct(text.match(UNLEARNABLE)), privateUse: distinct(text.match(PRIVATE_USE)) };
}

/** Why a line with text cannot be read at its size, or null when it can. */
export function tooSmallToRead(polygon: readonly Point[], text: string): string | null {
  const box = boundingBox(polygon);
  if (box.width < MIN_LINE_SIDE_PX || box.height < MIN_LINE_SIDE_PX)
    return `${Math.round(box.width)}×${Math.round(box.height)} px, under ${MIN_LINE_SIDE_PX} px`;
  const characters = [...text].length;
  if (box.width < (characters * box.height) / FRAMES_PER_HEIGHT)
    return `${characters} characters in ${Math.round(box.width)} px of a ${Math.round(box.height)} px high line`;
  return null;
}

/** `U+00AD` for a character, as details and warnings name them. */
export function codePointName(character: string): string {
  return `U+${(character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

function distinct(matches: RegExpMatchArray | null): string[] {
  return [...new Set(matches ?? [])].sort();
}
