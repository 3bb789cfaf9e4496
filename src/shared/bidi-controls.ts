// Unicode's bidirectional formatting characters: ALM (U+061C), LRM and RLM (U+200E, U+200F), the
// embeddings and overrides LRE, RLE, PDF, LRO, RLO (U+202A–U+202E) and the isolates LRI, RLI, FSI,
// PDI (U+2066–U+2069). In a file name they reorder the text shown around them and can disguise an
// extension (`invoice<U+202E>gpj.exe` reads `invoiceexe.jpg`), so names quoted in messages and
// shown in the portal never carry them raw.

/** The characters, as the body of a regular expression character class. */
export const BIDI_CONTROL_CLASS = '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';

/** `text` with each bidirectional control written visibly as `[U+202E]`. */
export function showBidiControls(text: string): string {
  return text.replace(
    new RegExp(`[${BIDI_CONTROL_CLASS}]`, 'g'),
    (character) => `[U+${character.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}]`,
  );
}
