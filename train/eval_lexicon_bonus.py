"""Measure lexicon-aware CTC beam search on the validation lines (an experiment, not the service's decoder).

The prefix beam search of ctc_beam.py with its known-word bonus: when a word ends (a space after it,
or the end of the line), the prefix gets a bonus `gamma` if the word (punctuation stripped,
lower-cased) is in the language's lexicon: the training transcriptions' words (train/lexicon.py),
plus a word list with --lexicon LANG=FILE. A word outside the lexicon only misses the bonus, so a historical or
misspelt word can still win. Reads the logits cache of eval_decoding.py (--logits-cache) and reports
CER/WER on the tune and test halves of the validation documents (the same split as eval_decoding.py).

    python3 train/eval_lexicon_bonus.py --checkpoint RUN/best-slim.pt --logits-cache CACHE.npz \\
        --lm models/hwr-htr-v3/lm.bin.gz --lexicon en=/usr/share/dict/british-english --lexicon fr=FR-FORMS.txt \\
        --grid 0.5,2,0,10 --grid 0.5,1.5,2,30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from char_lm import read_lexicon, read_texts  # noqa: E402
from ctc_beam import BeamOptions, beam_search  # noqa: E402
from eval_decoding import REPO, cached_model_run, documents, load_lms  # noqa: E402
from lexicon import build  # noqa: E402
from metrics import ErrorRate  # noqa: E402


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
    lexicons = {lang: set(words) for lang, words in build(train).items()}
    for spec in args.lexicon:
        lang, _, file = spec.partition("=")
        lexicons.setdefault(lang, set()).update(word.lower() for word in read_lexicon(Path(file), alphabet))
    print({lang: len(words) for lang, words in lexicons.items()}, flush=True)
    for spec in args.grid:
        alpha, beta, gamma, beam = (float(x) for x in spec.split(","))
        for name, subset in halves.items():
            started = time.time()
            rate = ErrorRate()
            for line, lp in subset:
                options = BeamOptions(beam=int(beam), alpha=alpha, beta=beta, word_bonus=gamma)
                rate.add(beam_search(lp, charset, models[line.lang], options, lexicons.get(line.lang, set())), line.text)
            print(f"alpha {alpha} beta {beta} gamma {gamma} beam {int(beam)} {name}: CER {rate.cer:.4f} WER {rate.wer:.4f} ({time.time() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
