// A fake correction model for evaluations: it answers in the provider's wire format (through
// FakeLlmServer) from the lines of the request alone, without knowing the ground truth. What it
// knows is what a small model of OCR errors knows: the 100 most frequent English words (Fry's
// first hundred), the character confusions recognisers make (c/e, q/g, o/e, o/a, n/u, l/i, rn/m,
// cl/d), and that two words run together are written apart. A word it does not know is changed
// only when one confusion turns it into a word it knows, which is how it fixes "tho" and
// "withthe", misses "complicatc" (it does not know "complicate"), and, like an over-eager
// model, turns a correct "those" into "these".
import { requestLines } from './correction-pages.ts';
import { answerLines, type Handler } from './fake-llm-server.ts';

export const FRY_FIRST_100 = new Set(
  (
    'the of and a to in is you that it he was for on are as with his they i at be this have from or one had by words but ' +
    'not what all were we when your can said there use an each which she do how their if will up other about out many then ' +
    'them these so some her would make like him into time has look two more write go see number no way could people my than ' +
    'first water been called who oil sit now find long down day did get come made may part'
  ).split(' '),
);

const CONFUSIONS: Array<[string, string]> = [
  ['c', 'e'],
  ['q', 'g'],
  ['o', 'e'],
  ['o', 'a'],
  ['n', 'u'],
  ['l', 'i'],
  ['rn', 'm'],
  ['cl', 'd'],
];

/** The word with one confusion undone that the lexicon knows, the first in the list's order; null if none. */
function confusionFix(word: string, lexicon: Set<string>): string | null {
  for (const [a, b] of CONFUSIONS) {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ]) {
      for (let at = word.indexOf(from); at >= 0; at = word.indexOf(from, at + 1)) {
        const candidate = word.slice(0, at) + to + word.slice(at + from.length);
        if (lexicon.has(candidate)) return candidate;
      }
    }
  }
  return null;
}

function split(word: string, lexicon: Set<string>): string | null {
  for (let at = 2; at <= word.length - 2; at++) {
    if (lexicon.has(word.slice(0, at)) && lexicon.has(word.slice(at))) return `${word.slice(0, at)} ${word.slice(at)}`;
  }
  return null;
}

/** The line as the fake model corrects it. */
export function fakeCorrectLine(text: string, lexicon: Set<string> = FRY_FIRST_100): string {
  return text
    .split(' ')
    .map((token) => {
      const match = /^([A-Za-z]+)(.*)$/.exec(token);
      if (!match) return token;
      const [, letters, rest] = match;
      const lower = letters.toLowerCase();
      if (lexicon.has(lower)) return token;
      const fixed = confusionFix(lower, lexicon) ?? split(lower, lexicon);
      if (fixed === null) return token;
      const cased = letters[0] === letters[0].toUpperCase() ? fixed[0].toUpperCase() + fixed.slice(1) : fixed;
      return cased + rest;
    })
    .join(' ');
}

/** Tokens as providers roughly count them: a quarter of the characters. */
export const roughTokens = (text: string): number => Math.ceil(text.length / 4);

/** A FakeLlmServer handler: every requested line corrected by fakeCorrectLine, usage counted from the texts. */
export function fakeCorrector(lexicon: Set<string> = FRY_FIRST_100): Handler {
  return (request) => {
    const lines = requestLines(request.userText).map((line) => ({ id: line.id, text: fakeCorrectLine(line.text, lexicon) }));
    return answerLines(lines, { input: roughTokens(request.system + request.userText), output: roughTokens(JSON.stringify({ lines })) });
  };
}
