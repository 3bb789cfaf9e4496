"""CTC prefix beam search with a character n-gram language model (Hannun et al. 2014, "first-pass LM").

The TypeScript decoder (src/pipeline/decoding/ctc-beam-search.ts) implements the same algorithm with the same
parameters; this one measures it against greedy decoding on the validation set and tunes alpha/beta.

For every prefix the search keeps two log scores: ending in blank (pb) and ending in its last
character (pnb). Extending a prefix by character c adds log P_ctc(c at t) + alpha * log P_lm(c | prefix)
+ beta; a repeated character only extends from the blank-ending score (CTC needs a blank between two
equal letters), otherwise it collapses into the same prefix. At the end each prefix gets
alpha * log P_lm(boundary | prefix) and the best total wins.
Per frame only classes with log P_ctc >= log(prune) are tried (at most `max_candidates`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from char_lm import BOUNDARY, CharNgram

NEG = -math.inf


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


def beam_search(log_probs: np.ndarray, charset: list[str], lm: CharNgram | None, options: BeamOptions) -> str:
    """log_probs (T, C) natural-log probabilities, class 0 = blank, class k = charset[k - 1]."""
    beams: dict[str, list[float]] = {"": [0.0, NEG]}  # prefix -> [pb, pnb]
    lm_cache: dict[tuple[str, str], float] = {}
    log_prune = math.log(options.prune)

    def lm_score(prefix: str, char: str) -> float:
        if lm is None:
            return options.beta
        key = (prefix, char)
        value = lm_cache.get(key)
        if value is None:
            value = options.alpha * lm.logp(prefix, char) + options.beta
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
        score = logaddexp(pb, pnb)
        if lm is not None:
            score += options.alpha * lm.logp(prefix, BOUNDARY)
        return score

    return max(beams.items(), key=final)[0]
