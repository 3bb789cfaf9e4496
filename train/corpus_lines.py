"""Running text for the character LM from TEI novels (the ELTeC collections, 1840-1920): the paragraphs of
each file's <body> written as the transcriptions are written (`text_norm`'s conventions: ASCII quotes and
dashes), cut into pseudo-lines of the training lines' lengths at spaces, one per output line.

    python3 train/corpus_lines.py --tei DIR --dataset ../shared/datasets/htr-lines --out fra.txt

Paragraphs with a character the recognizer cannot write (not in the training transcriptions) are left
out whole, not patched. The cut is seeded, so the same files give the same lines.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from char_lm import read_texts  # noqa: E402

TEI = "{http://www.tei-c.org/ns/1.0}"
# text_norm writes these as ASCII; the rest of the alphabet is the transcriptions' own
TYPOGRAPHY = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"', "«": '"', "»": '"', "„": '"',
                            "–": "-", "—": "-", "‐": "-", "‑": "-", "\u00a0": " ", "\u202f": " ", "\u2009": " "})
SKIPPED = {TEI + "note", TEI + "head", TEI + "fw", TEI + "label"}


def paragraph_text(element: ET.Element) -> str:
    parts: list[str] = []

    def walk(node: ET.Element) -> None:
        if node.tag in SKIPPED:
            return
        if node.text:
            parts.append(node.text)
        for child in node:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return " ".join("".join(parts).split())


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text).translate(TYPOGRAPHY).replace("…", "...")
    # French typography puts a space inside guillemets; the transcriptions do not
    text = re.sub(r'"\s+([^"]*?)\s+"', r'"\1"', text)
    return " ".join(text.split())


def paragraphs(path: Path) -> list[str]:
    body = ET.parse(path).getroot().find(f"{TEI}text/{TEI}body")
    if body is None:
        return []
    return [t for t in (normalise(paragraph_text(p)) for p in body.iter() if p.tag in (TEI + "p", TEI + "l")) if t]


def cut(text: str, lengths: list[int], rng: random.Random) -> list[str]:
    """The paragraph as lines about as long as handwritten ones, each ending at a space."""
    words, lines, line = text.split(" "), [], ""
    target = rng.choice(lengths)
    for word in words:
        if line and len(line) + 1 + len(word) > target:
            lines.append(line)
            line, target = word, rng.choice(lengths)
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tei", type=Path, required=True, help="folder of TEI files (searched recursively for *.xml)")
    p.add_argument("--dataset", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    train = read_texts(args.dataset / "train.tsv")
    alphabet = {ch for _, t in train for ch in t}
    lengths = [len(t) for _, t in train if len(t) >= 8]
    rng = random.Random(args.seed)
    kept = dropped = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for path in sorted(args.tei.rglob("*.xml")):
            for text in paragraphs(path):
                if not set(text) <= alphabet:
                    dropped += 1
                    continue
                kept += 1
                for line in cut(text, lengths, rng):
                    out.write(line + "\n")
    print(f"{args.out}: {kept} paragraphs kept, {dropped} with characters outside the alphabet left out; "
          f"{args.out.stat().st_size / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
