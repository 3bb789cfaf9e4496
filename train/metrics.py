"""Edit-distance metrics and greedy CTC decoding (shared by training, evaluation and export checks)."""

from __future__ import annotations

from typing import Sequence

import torch


def levenshtein(a: Sequence, b: Sequence) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


class ErrorRate:
    """Accumulates character and word errors over many lines (sum of edits / sum of reference length)."""

    def __init__(self) -> None:
        self.char_edits = 0
        self.chars = 0
        self.word_edits = 0
        self.words = 0

    def add(self, hypothesis: str, reference: str) -> None:
        self.char_edits += levenshtein(hypothesis, reference)
        self.chars += len(reference)
        ref_words = reference.split()
        self.word_edits += levenshtein(hypothesis.split(), ref_words)
        self.words += len(ref_words)

    @property
    def cer(self) -> float:
        return self.char_edits / max(1, self.chars)

    @property
    def wer(self) -> float:
        return self.word_edits / max(1, self.words)


def greedy_decode(log_probs: torch.Tensor, lengths: Sequence[int], charset: Sequence[str]) -> list[str]:
    """log_probs (N, T, C), class 0 = blank, class k = charset[k - 1]."""
    best = log_probs.argmax(dim=-1)
    texts: list[str] = []
    for row, length in zip(best.tolist(), lengths):
        out: list[str] = []
        previous = 0
        for k in row[:length]:
            if k != previous and k != 0:
                out.append(charset[k - 1])
            previous = k
        texts.append("".join(out))
    return texts
