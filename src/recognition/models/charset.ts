// The recognizer's output classes: the charset file's lines, an optional trailing
// space class, and the CTC blank at index 0 or at the end.
import { readFileSync } from 'node:fs';
import { PipelineError } from '../page/errors.ts';
import type { RecognitionSpec } from './model-spec.ts';

export interface CharacterClasses {
  /** Text of each output class; the blank's entry is ''. */
  symbols: string[];
  blank: number;
  /** Index of the space class, or -1 when the model has none. */
  space: number;
  /** 1 for each class decoding may choose (the blank always), or null: every class. */
  allowed: Uint8Array | null;
}

type ClassSpec = Pick<RecognitionSpec, 'charset' | 'appendSpace' | 'blankIndex'> & { restrictTo?: RecognitionSpec['restrictTo'] };

export function loadCharacterClasses(spec: ClassSpec): CharacterClasses {
  let text: string;
  try {
    text = readFileSync(spec.charset, 'utf8');
  } catch (error) {
    throw new PipelineError('model_invalid', `cannot read the charset ${spec.charset}: ${(error as Error).message}`, { cause: error });
  }
  return characterClasses(text, spec);
}

export function characterClasses(charsetText: string, spec: Omit<ClassSpec, 'charset'>): CharacterClasses {
  const lines = charsetText
    .replace(/^\uFEFF/, '')
    .split('\n')
    .map((line) => line.replace(/\r$/, ''));
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) throw new PipelineError('model_invalid', 'the charset file is empty');
  const characters = spec.appendSpace ? [...lines, ' '] : lines;
  const symbols = spec.blankIndex === 0 ? ['', ...characters] : [...characters, ''];
  const blank = spec.blankIndex === 0 ? 0 : symbols.length - 1;
  const allowed =
    spec.restrictTo === 'latin' ? Uint8Array.from(symbols, (symbol, index) => (index === blank || isLatinText(symbol) ? 1 : 0)) : null;
  return { symbols, blank, space: symbols.indexOf(' '), allowed };
}

/**
 * Latin letters, digits, punctuation and symbols of Western writing: the Latin script,
 * everything below U+0300 (ASCII, Latin-1, spacing modifiers), combining diacritics,
 * general punctuation and currency signs. Not CJK, not full-width forms.
 */
export function isLatinText(symbol: string): boolean {
  if (symbol === '') return false;
  for (const character of symbol) {
    const code = character.codePointAt(0) ?? 0;
    const ok =
      (code >= 0x20 && code < 0x7f) ||
      (code >= 0xa0 && code <= 0x36f) ||
      (code >= 0x2000 && code <= 0x206f) ||
      (code >= 0x20a0 && code <= 0x20cf) ||
      /\p{Script=Latin}/u.test(character);
    if (!ok) return false;
  }
  return true;
}

/**
 * The classes decoding may choose, as a model whose output is cut to them has them (graph/
 * keep-output-classes.ts), with the indices of those classes in the full output; null where every
 * class is allowed.
 */
export function allowedClasses(classes: CharacterClasses): { indices: number[]; classes: CharacterClasses } | null {
  const { allowed } = classes;
  if (allowed === null) return null;
  const indices = classes.symbols.flatMap((_, index) => (allowed[index] === 1 ? [index] : []));
  const symbols = indices.map((index) => classes.symbols[index] as string);
  return {
    indices,
    classes: {
      symbols,
      blank: indices.indexOf(classes.blank),
      space: classes.space < 0 ? -1 : indices.indexOf(classes.space),
      allowed: null,
    },
  };
}
