"""Measure lexicon-aware CTC beam search on the validation lines (an experiment, not the service's decoder).

The prefix beam search of ctc_beam.py with one addition: when a word ends (a space after it, or the
end of the line), the prefix gets a bonus `gamma` if the word (punctuation stripped; as written or
lower-cased) is in the language's lexicon: the training transcriptions' words, plus a word list
with --lexicon LANG=FILE. A word outside the lexicon only misses the bonus, so a historical or
misspelt word can still win. Reads the logits cache of eval_decoding.py (--logits-cache) and reports
CER/WER on the tune and test halves of the validation documents (the same split as eval_decoding.py).

    python3 train/eval_lexicon_bonus.py --checkpoint RUN/best-slim.pt --logits-cache CACHE.npz \\
        --lm models/hwr-htr-v3/lm.json --lexicon en=/usr/share/dict/british-english --lexicon fr=FR-FORMS.txt \\
        --grid 0.5,2,0,10 --grid 0.5,1.5,2,30
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from char_lm import BOUNDARY, read_lexicon, read_texts  # noqa: E402
from ctc_beam import NEG, logaddexp  # noqa: E402
from eval_decoding import REPO, cached_model_run, documents, load_lms  # noqa: E402
from metrics import ErrorRate  # noqa: E402

EDGES = re.compile(r"^\W+|\W+$")


def beam_search_lexicon(log_probs, charset, lm, alpha, beta, lexicon: set[str], gamma, beam=10, prune=1e-3, max_candidates=12) -> str:
    beams: dict[str, list[float]] = {"": [0.0, NEG]}
    log_prune = math.log(prune)
    cache: dict[tuple[str, str], float] = {}

    def bonus(prefix: str) -> float:
        word = EDGES.sub("", prefix.rsplit(" ", 1)[-1])
        if not word or any(ch.isdigit() for ch in word):
            return 0.0
        return gamma if word in lexicon or word.lower() in lexicon else 0.0

    def score(prefix: str, char: str) -> float:
        value = cache.get((prefix, char))
        if value is None:
            value = alpha * lm.logp(prefix, char) + beta
            if char == " " and prefix and prefix[-1] != " ":
                value += bonus(prefix)
            cache[(prefix, char)] = value
        return value

    for frame in log_probs:
        blank = float(frame[0])
        candidates = np.nonzero(frame[1:] >= log_prune)[0] + 1
        if len(candidates) > max_candidates:
            candidates = candidates[np.argsort(-frame[candidates])[:max_candidates]]
        following: dict[str, list[float]] = {}

        def entry(prefix: str) -> list[float]:
            e = following.get(prefix)
            if e is None:
                e = following[prefix] = [NEG, NEG]
            return e

        for prefix, (pb, pnb) in beams.items():
            total = logaddexp(pb, pnb)
            e = entry(prefix)
            e[0] = logaddexp(e[0], total + blank)
            last = prefix[-1] if prefix else None
            for k in candidates.tolist():
                char, p = charset[k - 1], float(frame[k])
                ext = entry(prefix + char)
                if char == last:
                    ext[1] = logaddexp(ext[1], pb + p + score(prefix, char))
                    e[1] = logaddexp(e[1], pnb + p)
                else:
                    ext[1] = logaddexp(ext[1], total + p + score(prefix, char))
        beams = dict(sorted(following.items(), key=lambda item: logaddexp(*item[1]), reverse=True)[:beam])

    def final(item) -> float:
        prefix, (pb, pnb) = item
        value = logaddexp(pb, pnb) + alpha * lm.logp(prefix, BOUNDARY)
        return value + (bonus(prefix) if prefix and prefix[-1] != " " else 0.0)

    return max(beams.items(), key=final)[0]


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--logits-cache", type=Path, required=True)
    p.add_argument("--lm", type=Path, required=True)
    p.add_argument("--lexicon", action="append", default=[], metavar="LANG=FILE")
    p.add_argument("--grid", action="append", required=True, metavar="ALPHA,BETA,GAMMA,BEAM")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    args = p.parse_args(argv)

    results, charset = cached_model_run(args.checkpoint, args.dataset, args.cache, 0, args.logits_cache)
    document_of = documents(args.dataset / "val.tsv")
    doc_ids = sorted({document_of[line.file] for line, _ in results})
    tune_docs = set(doc_ids[::2])
    halves = {"tune": [r for r in results if document_of[r[0].file] in tune_docs], "test": [r for r in results if document_of[r[0].file] not in tune_docs]}
    models = load_lms(args.lm)
    train = read_texts(args.dataset / "train.tsv")
    alphabet = {ch for _, t in train for ch in t}
    lexicons: dict[str, set[str]] = {}
    for lang, text in train:
        words = lexicons.setdefault(lang, set())
        for token in text.split():
            word = EDGES.sub("", token)
            if word:
                words.update((word, word.lower()))
    for spec in args.lexicon:
        lang, _, file = spec.partition("=")
        lexicons.setdefault(lang, set()).update(read_lexicon(Path(file), alphabet))
    print({lang: len(words) for lang, words in lexicons.items()}, flush=True)
    for spec in args.grid:
        alpha, beta, gamma, beam = (float(x) for x in spec.split(","))
        for name, subset in halves.items():
            started = time.time()
            rate = ErrorRate()
            for line, lp in subset:
                rate.add(beam_search_lexicon(lp, charset, models[line.lang], alpha, beta, lexicons.get(line.lang, set()), gamma, int(beam)), line.text)
            print(f"alpha {alpha} beta {beta} gamma {gamma} beam {int(beam)} {name}: CER {rate.cer:.4f} WER {rate.wer:.4f} ({time.time() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
