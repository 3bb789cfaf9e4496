// Stand-in correction models for the guard evaluation (bench/correction-guards.ts) and its tests:
// each answers a correction request (the lines of one page, as the service sends them) with a
// behaviour, knowing the page's ground truth, through FakeLlmServer's real OpenAI and Gemini wire
// formats. Deterministic: every choice is drawn from a hash of the line id.
//
//   perfect        each line becomes the ground-truth line closest to it (edit distance)
//   noisy          the same with about one character in 25 wrong (a similar letter, one dropped or doubled)
//   modernising    the same with spelling modernised and abbreviations expanded (& → and/et, ye → the, Mr → Mister, étoit → était, …)
//   completing     the same with the first words of the next ground-truth line added, as if finishing a cut-off line
//   shifting       each line gets the closest ground-truth line of the next line (text moved up a line)
//   hallucinating  each line gets a fluent line of another document, of about its length
//   truncating     the same as perfect with its last third of words left out
//   guessing       perfect where our reading is close (edit ratio to the true line at most 0.3), and
//                  where it is far, a fluent line of another document of about its length: a model
//                  right on the lines it can read that makes up the ones it cannot (what a text-only
//                  model does with a badly read line); its pages look supported, its guesses are not
//   dropping       perfect, but one line in three (drawn per line) loses its last word: a model right on
//                  a page that now and then drops a word at a line's end; its pages look supported too
//
// For choosing thresholds only, truncations of other lengths (TRUNCATIONS: the last word, the last
// quarter, the last half of the words left out): a real model cuts anywhere.
//
// Ground truth is given as the scoring level's text (bench/lib/text-metrics.ts normaliseText: the
// datasets' markup such as ⟦…⟧ and ^ dropped), which is what the recognizers were trained to write.
import { requestLines } from '../../test/support/correction-pages.ts';
import { answerLines, type Handler } from '../../test/support/fake-llm-server.ts';
import { editRatio } from '../../src/recognition/correction/edit-distance.ts';
import { mulberry32 } from './seeded-random.ts';
import { editDistance, normaliseText } from './text-metrics.ts';

export const BEHAVIOURS = [
  'perfect',
  'noisy',
  'modernising',
  'completing',
  'shifting',
  'hallucinating',
  'truncating',
  'guessing',
  'dropping',
] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

/** The behaviours a guard must keep out (no page worse): all but perfect and noisy, the ones it must let through. */
export const MISBEHAVIOURS: readonly Behaviour[] = BEHAVIOURS.filter((behaviour) => behaviour !== 'perfect' && behaviour !== 'noisy');

/** Truncations of other lengths, for choosing thresholds: how many of a line's n words are kept. */
export const TRUNCATIONS = {
  'truncating a word': (words: number) => words - 1,
  'truncating a quarter': (words: number) => Math.ceil((words * 3) / 4),
  'truncating a half': (words: number) => Math.ceil(words / 2),
} as const;
export type Truncation = keyof typeof TRUNCATIONS;

/** The perfect answer with each line's words cut to `TRUNCATIONS[truncation]` (lines of one word kept). */
export function truncationAnswer(
  truncation: Truncation,
  lines: readonly { id: string; text: string }[],
  page: StandInPage,
): { id: string; text: string }[] {
  return standInAnswer('perfect', lines, page).map((line) => {
    const words = line.text.split(' ');
    return words.length < 2 ? line : { id: line.id, text: words.slice(0, Math.max(1, TRUNCATIONS[truncation](words.length))).join(' ') };
  });
}

export interface StandInPage {
  /** The page's ground-truth lines in reading order. */
  groundTruth: readonly string[];
  /** Fluent lines of other documents (what hallucinating answers with). */
  otherText: readonly string[];
}

/**
 * A FakeLlmServer handler answering every request for `page()` (the page being corrected) with the
 * behaviour's texts. `page` is read per request: the evaluation corrects one page at a time.
 */
export function standInHandler(behaviour: Behaviour, page: () => StandInPage): Handler {
  return (request) => {
    const lines = requestLines(request.userText);
    const answers = standInAnswer(
      behaviour,
      lines.map((line) => ({ id: line.id, text: line.text })),
      page(),
    );
    return answerLines(answers);
  };
}

/** The behaviour's answer for the recognised lines of one page. */
export function standInAnswer(
  behaviour: Behaviour,
  lines: readonly { id: string; text: string }[],
  page: StandInPage,
): { id: string; text: string }[] {
  const truth = page.groundTruth.map(normaliseText).filter((line) => line !== '');
  const nearest = lines.map((line) => nearestLine(line.text, truth));
  return lines.map((line, index) => {
    const closest = nearest[index];
    const perfect = closest === -1 ? line.text : truth[closest];
    const random = seeded(`${behaviour}:${line.id}:${line.text}`);
    switch (behaviour) {
      case 'perfect':
        return { id: line.id, text: perfect };
      case 'noisy':
        return { id: line.id, text: withNoise(perfect, random) };
      case 'modernising':
        return { id: line.id, text: modernised(perfect) };
      case 'completing': {
        const next = truth[closest + 1] ?? truth[closest - 1] ?? '';
        const words = next.split(' ').slice(0, 2 + Math.floor(random() * 2));
        return { id: line.id, text: words.length > 0 ? `${perfect} ${words.join(' ')}` : perfect };
      }
      case 'shifting': {
        const below = nearest[index + 1];
        return { id: line.id, text: below === undefined || below === -1 ? line.text : truth[below] };
      }
      case 'hallucinating':
        return { id: line.id, text: unrelatedLine(line.text, page.otherText, random) };
      case 'truncating':
        return { id: line.id, text: truncated(perfect) };
      case 'guessing':
        return { id: line.id, text: editRatio(line.text, perfect) <= 0.3 ? perfect : unrelatedLine(line.text, page.otherText, random) };
      case 'dropping':
        return { id: line.id, text: random() < 1 / 3 ? withoutLastWord(perfect) : perfect };
    }
  });
}

/** Index of the ground-truth line nearest the recognised text (edit distance over code points); -1 without lines. */
export function nearestLine(text: string, truth: readonly string[]): number {
  const characters = Array.from(text);
  let best = -1;
  let bestDistance = Number.POSITIVE_INFINITY;
  truth.forEach((line, index) => {
    const distance = editDistance(characters, Array.from(line));
    if (distance < bestDistance) {
      best = index;
      bestDistance = distance;
    }
  });
  return best;
}

const SIMILAR: Record<string, string> = {
  a: 'o',
  o: 'a',
  e: 'c',
  c: 'e',
  n: 'u',
  u: 'n',
  i: 'l',
  l: 'i',
  m: 'n',
  r: 'v',
  h: 'b',
  t: 'l',
  s: 'r',
  d: 'a',
};

function withNoise(text: string, random: () => number): string {
  const characters = Array.from(text);
  const errors = Math.max(1, Math.round(characters.length / 25));
  for (let error = 0; error < errors && characters.length > 1; error += 1) {
    const at = Math.floor(random() * characters.length);
    const kind = random();
    if (kind < 0.6) characters[at] = SIMILAR[characters[at].toLowerCase()] ?? 'e';
    else if (kind < 0.8) characters.splice(at, 1);
    else characters.splice(at, 0, characters[at]);
  }
  return characters.join('');
}

/** Spelling modernised, abbreviations expanded (English and French), as an over-helpful model would. */
const MODERNISATIONS: [RegExp, string][] = [
  [/&c\.?/g, 'etc.'],
  [/\bye\b/g, 'the'],
  [/\byr\b/g, 'your'],
  [/\bwch\b/g, 'which'],
  [/\bwd\b/g, 'would'],
  [/\bshd\b/g, 'should'],
  [/\brecd\b/g, 'received'],
  [/\bMrs\b\.?/g, 'Missus'],
  [/\bMr\b\.?/g, 'Mister'],
  [/\bDr\b\.?/g, 'Doctor'],
  [/\bSt\b\.?/g, 'Saint'],
  [/\bshew/g, 'show'],
  [/\bconnexion/g, 'connection'],
  [/\bto-day\b/g, 'today'],
  [/\bto-morrow\b/g, 'tomorrow'],
  [/\b(col|fav|hon|lab|neighb|behavi|hum)our/g, '$1or'],
  [/\bMme\b\.?/g, 'Madame'],
  [/\bMlle\b\.?/g, 'Mademoiselle'],
  [/\bM\.(?= [A-Z])/g, 'Monsieur'],
  [/\bqq\b/g, 'quelque'],
  [/\btems\b/g, 'temps'],
  [/\benfans\b/g, 'enfants'],
  [/oi(t|ent|s)\b/g, 'ai$1'],
  [/\b1er\b/g, 'premier'],
  [/\b(\d+)bre\b/g, '$1 décembre'],
];

function modernised(text: string): string {
  let result = text;
  for (const [pattern, replacement] of MODERNISATIONS) result = result.replace(pattern, replacement);
  const and = /[àâçéèêëîïôûùü]|\b(le|la|les|et|de|des|du|que|qui|pour)\b/i.test(text) ? 'et' : 'and';
  return result.replace(/ & /g, ` ${and} `);
}

function withoutLastWord(text: string): string {
  const words = text.split(' ');
  return words.length < 2 ? text : words.slice(0, -1).join(' ');
}

function truncated(text: string): string {
  const words = text.split(' ');
  if (words.length >= 2) return words.slice(0, Math.max(1, Math.ceil((words.length * 2) / 3))).join(' ');
  const characters = Array.from(text);
  return characters.slice(0, Math.ceil(characters.length / 2)).join('');
}

/** The other document's line closest in length to the recognised text, among a few drawn at random. */
function unrelatedLine(text: string, other: readonly string[], random: () => number): string {
  if (other.length === 0) return text;
  let best = other[Math.floor(random() * other.length)];
  for (let draw = 0; draw < 8; draw += 1) {
    const candidate = other[Math.floor(random() * other.length)];
    if (Math.abs(candidate.length - text.length) < Math.abs(best.length - text.length)) best = candidate;
  }
  return best;
}

/** A small deterministic generator (mulberry32) seeded by a string's FNV-1a hash. */
function seeded(key: string): () => number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return mulberry32(hash);
}
