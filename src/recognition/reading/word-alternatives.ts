// A word's alternatives: what the beam search's other final readings say in the word's place.
// Each runner-up reading is laid over the best one by position: the characters whose centre
// falls inside the word's span (reaching halfway into the gaps around it, as the word's box
// does) are that reading's text for the word. Readings that say the same text add up their
// shares of the beam's final probability, so each text of the word has a probability p among
// the readings; the best word's text has p_best.
//
// Calibrated as line confidences are: the word's confidence c (the mean of its characters'
// confidences through the model's calibration map, docs/recognition.md) is the probability that
// the word is right; what is left, 1 - c, is shared among the other texts in proportion to their
// share of what the beam gave them outside the best text: confidence = (1 - c) * p / (1 - p_best).
// So the alternatives never sum above 1 - c, keep the beam's order, and a word every reading
// agrees on has none.
import type { WordAlternative } from '../page/page-result.ts';
import type { CompetingReadings, PlacedCharacter } from './text-recognizer.ts';

/** At most this many alternatives a word. */
export const MAX_WORD_ALTERNATIVES = 3;
/** Texts with less of the beam's probability than this are noise, not alternatives. */
const MIN_SHARE = 0.005;

/**
 * The alternatives of a word spanning crop columns [start, end) whose text is `text` and whose
 * (calibrated) confidence is `confidence`.
 */
export function wordAlternatives(
  span: { start: number; end: number },
  text: string,
  confidence: number,
  competing: CompetingReadings,
): WordAlternative[] {
  const shares = new Map<string, number>();
  let bestShare = competing.share;
  for (const reading of competing.runnersUp) {
    const said = textInSpan(reading.characters, span.start, span.end);
    if (said === text) bestShare += reading.share;
    else if (said !== '') shares.set(said, (shares.get(said) ?? 0) + reading.share);
  }
  const outside = 1 - bestShare;
  if (outside <= 1e-9 || shares.size === 0) return [];
  return [...shares]
    .filter(([, share]) => share >= MIN_SHARE)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_WORD_ALTERNATIVES)
    .map(([said, share]) => ({ text: said, confidence: round(Math.min(1, ((1 - confidence) * share) / outside)) }))
    .filter((alternative) => alternative.confidence > 0);
}

function textInSpan(characters: readonly PlacedCharacter[], start: number, end: number): string {
  let text = '';
  for (const character of characters) {
    const centre = (character.start + character.end) / 2;
    if (centre >= start && centre < end) text += character.text;
  }
  return text.replace(/\s+/g, ' ').trim();
}

function round(value: number): number {
  return Math.round(value * 10000) / 10000;
}
