// Which of a language model file's per-language models fits a page: the one under which
// the page's first reading (greedy decoding of every line) is most likely. A page is
// hundreds of characters, enough for character n-grams to tell English from French even
// when a third of the letters are misread; beam search then uses that language's model.
import type { CharNgramModel } from './char-ngram-lm.ts';

/** Natural-log likelihood of `text` as one line (its characters, then the end of the line). */
export function lineLogLikelihood(model: CharNgramModel, text: string): number {
  let total = 0;
  let history = '';
  for (const char of text) {
    total += model.logProbability(history, char);
    history += char;
  }
  return total + model.logProbability(history, model.boundary);
}

/** The name of the model under which the lines are most likely; ties go to the first. */
export function mostLikelyLanguage(models: ReadonlyMap<string, CharNgramModel>, lines: readonly string[]): string {
  let best = '';
  let bestScore = -Infinity;
  for (const [name, model] of models) {
    const score = lines.reduce((sum, line) => sum + (line.trim() === '' ? 0 : lineLogLikelihood(model, line)), 0);
    if (best === '' || score > bestScore) {
      best = name;
      bestScore = score;
    }
  }
  return best;
}
