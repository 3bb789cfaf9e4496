"""The known words of each language for the beam search's word bonus: every word of the training transcriptions.

    /usr/bin/python3 train/lexicon.py --out models/hwr-htr-v3/lexicon.json

A word is a whitespace-separated token of a training line's text_norm (NFC) with leading and trailing
non-word characters stripped (punctuation, quotes, brackets); tokens left empty or holding a digit
are skipped (numbers are not words to know). Words are kept in lower case, and the search looks up
a word's lower-case form, so one entry serves "The", "the" and "THE". Format:
{"format": "hwr-lexicon/1", "source": ..., "languages": {"en": [...], "fr": [...]}} with each list sorted.
See docs/training.md, "A bonus for known words".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from char_lm import read_texts  # noqa: E402
from ctc_beam import word_of  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def build(texts: list[tuple[str, str]]) -> dict[str, list[str]]:
    words: dict[str, set[str]] = {}
    for lang, text in texts:
        known = words.setdefault(lang, set())
        for token in text.split():
            word = word_of(token)
            if word:
                known.add(word.lower())
    return {lang: sorted(found) for lang, found in sorted(words.items())}


def write_lexicon(dataset: Path, out: Path) -> dict[str, list[str]]:
    """The lexicon of a dataset's train.tsv written to `out`; returns its languages' words."""
    languages = build(read_texts(dataset / "train.tsv"))
    document = {"format": "hwr-lexicon/1", "source": "htr-lines train.tsv, text_norm (train/lexicon.py)", "languages": languages}
    out.write_text(json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    return languages


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    languages = write_lexicon(args.dataset, args.out)
    print({lang: len(found) for lang, found in languages.items()}, f"{args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
