"""Character n-gram language model: built from the training transcriptions, stored as JSON, queried
by the CTC beam search (train/ctc_beam.py here, src/pipeline/decoding/ctc-beam-search.ts in the service).

Estimation: interpolated Witten-Bell smoothing,

    P(c | h) = (C(h c) + T(h) * P(c | h')) / (C(h) + T(h))

with C(h) the count of context h followed by anything, T(h) the number of distinct characters seen
after h and h' the context without its first character; the unigram level is add-one smoothed over
the vocabulary. An interpolated model is stored exactly in backoff form: for every kept n-gram the
interpolated log P(c | h), for every context the log backoff weight T(h) / (C(h) + T(h)), so that
lookup needs only the two tables:

    logp(h, c) = ngrams[h + c]                       if h + c is stored
               = unknown                             if h is empty and c is not stored
               = backoff.get(h, 0) + logp(h[1:], c)  otherwise

Lines start with the context "\n" (the boundary symbol) and end by predicting "\n". n-grams of order
>= 3 seen fewer than `min_count` times are pruned (their probability then comes from the backoff).
All log probabilities are natural logarithms rounded to 3 decimals.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

FORMAT = "hwr-char-ngram/1"
BOUNDARY = "\n"


class CharNgram:
    def __init__(self, order: int, ngrams: dict[str, float], backoff: dict[str, float], unknown: float):
        self.order = order
        self.ngrams = ngrams
        self.backoff = backoff
        self.unknown = unknown

    def logp(self, history: str, char: str) -> float:
        """log P(char | history); history is the text so far (without the leading boundary)."""
        context = (BOUNDARY + history)[-(self.order - 1) :] if self.order > 1 else ""
        total = 0.0
        while True:
            value = self.ngrams.get(context + char)
            if value is not None:
                return total + value
            if not context:
                return total + self.unknown
            total += self.backoff.get(context, 0.0)
            context = context[1:]

    def line_logp(self, text: str) -> float:
        return sum(self.logp(text[:i], ch) for i, ch in enumerate(text)) + self.logp(text, BOUNDARY)

    @staticmethod
    def from_json(model: dict, order: int) -> "CharNgram":
        return CharNgram(order, model["ngrams"], model["backoff"], model["unknown"])


def estimate(texts: list[str], order: int, min_count: int) -> dict:
    counts: list[Counter] = [Counter() for _ in range(order + 1)]  # counts[n][gram] for n = 1..order
    for text in texts:
        padded = BOUNDARY + text + BOUNDARY
        for n in range(1, order + 1):
            # the first symbol is the start context only: never predicted, so grams end at index >= 1
            for end in range(max(1, n - 1) if n > 1 else 1, len(padded)):
                start = end - n + 1
                if start < 0:
                    continue
                counts[n][padded[start : end + 1]] += 1
    vocabulary = {g for g in counts[1]}
    total = sum(counts[1].values())
    unigram = {c: (counts[1][c] + 1) / (total + len(vocabulary) + 1) for c in vocabulary}
    unknown = 1 / (total + len(vocabulary) + 1)

    ngrams: dict[str, float] = {c: math.log(p) for c, p in unigram.items()}
    backoff: dict[str, float] = {}
    probability: dict[str, float] = dict(unigram)  # interpolated P for every (unpruned) gram, by gram

    def lower(gram: str) -> float:
        """Interpolated probability of gram[-1] after gram[1:-1], following pruning like the lookup does."""
        context, char = gram[1:-1], gram[-1]
        weight = 1.0
        while True:
            p = probability.get(context + char)
            if p is not None:
                return weight * p
            if not context:
                return weight * unknown
            weight *= math.exp(backoff.get(context, 0.0))
            context = context[1:]

    for n in range(2, order + 1):
        followers: dict[str, Counter] = defaultdict(Counter)
        for gram, count in counts[n].items():
            followers[gram[:-1]][gram[-1]] = count
        for context, chars in followers.items():
            c_h = sum(chars.values())
            t_h = len(chars)
            backoff[context] = math.log(t_h / (c_h + t_h))
            for char, count in chars.items():
                if n >= 3 and count < min_count:
                    continue
                gram = context + char
                p = (count + t_h * lower(gram)) / (c_h + t_h)
                probability[gram] = p
                ngrams[gram] = math.log(p)
    # contexts whose every continuation was pruned still carry a backoff weight: keep only useful ones
    kept_contexts = {g[:-1] for g in ngrams if len(g) > 1}
    backoff = {h: w for h, w in backoff.items() if h in kept_contexts}
    return {
        "ngrams": {g: round(v, 3) for g, v in sorted(ngrams.items())},
        "backoff": {h: round(v, 3) for h, v in sorted(backoff.items())},
        "unknown": round(math.log(unknown), 3),
    }


def read_texts(tsv: Path) -> list[tuple[str, str]]:
    import csv

    out = []
    with open(tsv, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            text = unicodedata.normalize("NFC", row["text_norm"]).strip()
            if text:
                out.append((row["lang"], text))
    return out


def perplexity_per_char(model: CharNgram, texts: list[str]) -> float:
    total = sum(model.line_logp(t) for t in texts)
    chars = sum(len(t) + 1 for t in texts)
    return math.exp(-total / chars)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description="Build the character n-gram LM from the htr-lines training transcriptions.")
    p.add_argument("--dataset", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--order", type=int, default=6)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--languages", default="en,fr", help="per-language models besides the joint one ('' for joint only)")
    args = p.parse_args(argv)

    train = read_texts(args.dataset / "train.tsv")
    val = read_texts(args.dataset / "val.tsv")
    groups = {"all": None, **{lang: lang for lang in args.languages.split(",") if lang}}
    models = {}
    for name, lang in groups.items():
        texts = [t for l, t in train if lang is None or l == lang]
        models[name] = estimate(texts, args.order, args.min_count)
        lm = CharNgram.from_json(models[name], args.order)
        held_out = [t for l, t in val if lang is None or l == lang]
        print(
            f"{name}: {len(texts)} lines, {len(models[name]['ngrams'])} n-grams, {len(models[name]['backoff'])} contexts, "
            f"validation perplexity per char {perplexity_per_char(lm, held_out):.2f}"
        )
    document = {
        "format": FORMAT,
        "order": args.order,
        "boundary": BOUNDARY,
        "logBase": "e",
        "source": "htr-lines train.tsv text_norm (NFC)",
        "models": models,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main(sys.argv[1:])
