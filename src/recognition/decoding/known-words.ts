// The known words of each language (train/lexicon.py: every word of the training
// transcriptions, lower-cased) and the beam search's bonus for them: when a prefix's last word
// ends (a space after it, or the end of the line) and its lower-case form is known, the prefix
// gains `wordBonus`. A word outside the list only misses the bonus, so a historical spelling or a
// name the list lacks can still win; the list never forces a word.
import { readFileSync } from 'node:fs';
import { PipelineError } from '../page/errors.ts';

export type KnownWords = ReadonlySet<string>;

/** Leading and trailing non-word characters (Python's `\W`: not a letter, digit or underscore). */
const EDGES = /^[^\p{L}\p{N}_]+|[^\p{L}\p{N}_]+$/gu;
const DIGIT = /\p{N}/u;

/** The language → known words of a lexicon file (format "hwr-lexicon/1"). */
export function loadKnownWords(file: string): Map<string, KnownWords> {
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new PipelineError('model_invalid', `the lexicon ${file} cannot be read: ${(error as Error).message}`, { cause: error });
  }
  const { format, languages } = (document ?? {}) as { format?: unknown; languages?: unknown };
  if (format !== 'hwr-lexicon/1' || typeof languages !== 'object' || languages === null)
    throw new PipelineError('model_invalid', `the lexicon ${file} is not an "hwr-lexicon/1" file with "languages"`);
  const result = new Map<string, KnownWords>();
  for (const [language, words] of Object.entries(languages)) {
    if (!Array.isArray(words) || words.some((word) => typeof word !== 'string'))
      throw new PipelineError('model_invalid', `the lexicon ${file}: languages.${language} must be a list of words`);
    result.set(language, new Set(words as string[]));
  }
  return result;
}

const lexiconFiles = new Map<string, Map<string, KnownWords>>();

/**
 * The known words a language model section asks for (its `lexicon`, when its `wordBonus` is not
 * 0), read once per file and process; null when it asks for none.
 */
export function knownWordsFor(spec: { lexicon: string | null; wordBonus: number }): ReadonlyMap<string, KnownWords> | null {
  if (!spec.lexicon || spec.wordBonus === 0) return null;
  let lexicon = lexiconFiles.get(spec.lexicon);
  if (!lexicon) {
    lexicon = loadKnownWords(spec.lexicon);
    lexiconFiles.set(spec.lexicon, lexicon);
  }
  return lexicon;
}

/** All languages' words in one set (for a joint language model). */
export function allKnownWords(lexicon: ReadonlyMap<string, KnownWords>): KnownWords {
  return new Set([...lexicon.values()].flatMap((words) => [...words]));
}

/** `bonus` when the last word of `prefix` (text after its last space) is known, else 0. */
export function knownWordBonus(prefix: string, words: KnownWords, bonus: number): number {
  const word = prefix.slice(prefix.lastIndexOf(' ') + 1).replace(EDGES, '');
  if (word === '' || DIGIT.test(word)) return 0;
  return words.has(word.toLowerCase()) ? bonus : 0;
}
