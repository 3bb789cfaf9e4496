"""CTC prefix beam search with a character n-gram language model (Hannun et al. 2014, "first-pass LM").

The TypeScript decoder (src/recognition/decoding/ctc-beam-search.ts) implements the same algorithm with the same
parameters; this one measures it against greedy decoding on the validation set and tunes alpha/beta.

For every prefix the search keeps two log scores: ending in blank (pb) and ending in its last
character (pnb). Extending a prefix by character c adds log P_ctc(c at t) + alpha * log P_lm(c | prefix)
+ beta; a repeated character only extends from the blank-ending score (CTC needs a blank between two
equal letters), otherwise it collapses into the same prefix. At the end each prefix gets
alpha * log P_lm(boundary | prefix) and the best total wins.
Per frame only classes with log P_ctc >= log(prune) are tried (at most `max_candidates`).
With known words (train/lexicon.py), a prefix whose last word ends (extended by a space, or at the end)
gains `word_bonus` when that word, stripped of its edge punctuation and lower-cased, is known
(src/recognition/decoding/known-words.ts).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from char_lm import BOUNDARY, CharNgram

NEG = -math.inf
EDGES = re.compile(r"^\W+|\W+$")


def logaddexp(a: float, b: float) -> float:
    if a == NEG:
        return b
    if b == NEG:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@dataclass(frozen=True)
class BeamOptions:
    beam: int = 10
    alpha: float = 0.5
    beta: float = 2.0
    prune: float = 1e-3
    max_candidates: int = 12
    word_bonus: float = 0.0


def word_of(token: str) -> str:
    """The word in a token: leading and trailing non-word characters stripped; '' for none or one with a digit."""
    word = EDGES.sub("", token)
    return "" if any(ch.isdigit() for ch in word) else word


def known_word_bonus(prefix: str, words: set[str], bonus: float) -> float:
    """`bonus` when the last word of `prefix`, lower-cased, is one of `words`."""
    word = word_of(prefix.rsplit(" ", 1)[-1])
    return bonus if word and word.lower() in words else 0.0


def beam_search(log_probs: np.ndarray, charset: list[str], lm: CharNgram | None, options: BeamOptions, known_words: set[str] | None = None) -> str:
    """log_probs (T, C) natural-log probabilities, class 0 = blank, class k = charset[k - 1]."""
    words = known_words if known_words and options.word_bonus else None

    def word_end(prefix: str) -> float:
        if words is None or not prefix or prefix[-1] == " ":
            return 0.0
        return known_word_bonus(prefix, words, options.word_bonus)

    beams: dict[str, list[float]] = {"": [0.0, NEG]}  # prefix -> [pb, pnb]
    lm_cache: dict[tuple[str, str], float] = {}
    log_prune = math.log(options.prune)

    def lm_score(prefix: str, char: str) -> float:
        key = (prefix, char)
        value = lm_cache.get(key)
        if value is None:
            value = options.beta if lm is None else options.alpha * lm.logp(prefix, char) + options.beta
            if char == " ":
                value += word_end(prefix)
            lm_cache[key] = value
        return value

    for frame in log_probs:
        blank = float(frame[0])
        candidates = np.nonzero(frame[1:] >= log_prune)[0] + 1
        if len(candidates) > options.max_candidates:
            candidates = candidates[np.argsort(-frame[candidates])[: options.max_candidates]]
        following: dict[str, list[float]] = {}

        def entry(prefix: str) -> list[float]:
            e = following.get(prefix)
            if e is None:
                e = [NEG, NEG]
                following[prefix] = e
            return e

        for prefix, (pb, pnb) in beams.items():
            total = logaddexp(pb, pnb)
            e = entry(prefix)
            e[0] = logaddexp(e[0], total + blank)
            last = prefix[-1] if prefix else None
            for k in candidates.tolist():
                char = charset[k - 1]
                p = float(frame[k])
                extended = prefix + char
                ext = entry(extended)
                if char == last:
                    ext[1] = logaddexp(ext[1], pb + p + lm_score(prefix, char))
                    e[1] = logaddexp(e[1], pnb + p)
                else:
                    ext[1] = logaddexp(ext[1], total + p + lm_score(prefix, char))
        ranked = sorted(following.items(), key=lambda item: logaddexp(item[1][0], item[1][1]), reverse=True)
        beams = dict(ranked[: options.beam])

    def final(item: tuple[str, list[float]]) -> float:
        prefix, (pb, pnb) = item
        score = logaddexp(pb, pnb) + word_end(prefix)
        if lm is not None:
            score += options.alpha * lm.logp(prefix, BOUNDARY)
        return score

    return max(beams.items(), key=final)[0]
