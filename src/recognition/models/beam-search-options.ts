// The beam search's settings and their defaults, apart from the search itself: the model
// manifest (models/model-manifest.ts) fills a language model's settings from these, and the
// search (ctc-beam-search.ts) takes them; this module imports nothing, so neither depends
// on the other through it.

export interface BeamSearchOptions {
  beam: number;
  /** Weight of the language model's log probability. */
  alpha: number;
  /** Bonus per emitted character (balances the LM's preference for short lines). */
  beta: number;
  /** Only classes with at least this probability at a frame are tried. */
  prune: number;
  maxCandidates: number;
  /** Added when a word ends that the search's known words hold (known-words.ts); 0: no bonus. */
  wordBonus: number;
}

// alpha and beta tuned on half of the validation documents (docs/training.md)
export const DEFAULT_BEAM_SEARCH: BeamSearchOptions = { beam: 10, alpha: 0.5, beta: 2.0, prune: 1e-3, maxCandidates: 12, wordBonus: 0 };
