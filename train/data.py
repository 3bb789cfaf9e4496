"""Dataset access for the htr-lines corpus: extraction to a cache, TSV rows, charset, batching.

The dataset folder is read-only shared material; the tar shards are unpacked once into a cache
directory outside the repository, keyed by the dataset digest, so a changed dataset never reuses a
stale cache.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import tarfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

SOURCE_HEIGHT = 64


@dataclass(frozen=True)
class Line:
    file: str
    text: str
    source: str
    lang: str
    line_type: str
    width: int  # at SOURCE_HEIGHT


def dataset_digest(dataset_dir: Path) -> str:
    """sha256 over (name, sha256(content)) of every file in the dataset folder, sorted by name."""
    outer = hashlib.sha256()
    for path in sorted(p for p in dataset_dir.iterdir() if p.is_file()):
        inner = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                inner.update(chunk)
        outer.update(f"{path.name}\0{inner.hexdigest()}\n".encode())
    return "sha256:" + outer.hexdigest()


COMPACT_MARKER = "compact.json"


def is_compact(dataset_dir: Path) -> bool:
    """A compact copy made by train/compact_data.py (smaller lines packed in a few files, for a GPU machine)."""
    return (dataset_dir / COMPACT_MARKER).exists()


def compact_meta(dataset_dir: Path) -> dict:
    return json.loads((dataset_dir / COMPACT_MARKER).read_text(encoding="utf-8"))


def ensure_extracted(dataset_dir: Path, cache_root: Path) -> tuple[Path, str]:
    """Unpack the tar shards into cache_root/<digest prefix>/ once; return (dir, digest).

    A compact copy needs no unpacking: it returns its own folder and the digest of the dataset it was
    made from, so that checkpoints trained on either can be resumed or initialised from on the other.
    """
    if is_compact(dataset_dir):
        return dataset_dir, compact_meta(dataset_dir)["dataset_digest"]
    digest = dataset_digest(dataset_dir)
    target = cache_root / digest.split(":")[1][:16]
    marker = target / ".complete"
    if not marker.exists():
        target.mkdir(parents=True, exist_ok=True)
        for shard in sorted(dataset_dir.glob("*.tar")):
            with tarfile.open(shard) as tar:
                for member in tar.getmembers():
                    if not member.isfile() or member.name.startswith("/") or ".." in member.name.split("/"):
                        raise ValueError(f"unexpected tar member {member.name!r} in {shard}")
                tar.extractall(target)
        marker.write_text(digest + "\n")
    return target, digest


def target_text(row: dict[str, str]) -> str:
    """Training target: the harmonised `text_norm` column (dataset markers removed, typography folded), NFC."""
    return unicodedata.normalize("NFC", row["text_norm"]).strip()


def read_split(dataset_dir: Path, split: str, images_dir: Path) -> list[Line]:
    lines: list[Line] = []
    with open(dataset_dir / f"{split}.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            text = target_text(row)
            if not text:
                continue
            if "pack_width" in row:  # compact copy: the width at SOURCE_HEIGHT is recorded, the pixels are packed
                lines.append(Line(row["file"], text, row["hand_or_document"].split(":")[0], row["lang"], row["line_type"], int(row["pack_width"])))
                continue
            with Image.open(images_dir / row["file"]) as im:
                width, height = im.size
            if height != SOURCE_HEIGHT:
                raise ValueError(f"{row['file']}: height {height}, expected {SOURCE_HEIGHT}")
            lines.append(Line(row["file"], text, row["hand_or_document"].split(":")[0], row["lang"], row["line_type"], width))
    return lines


def build_charset(lines: list[Line]) -> list[str]:
    """Every character of the training targets plus space, by descending frequency then code point."""
    counts: dict[str, int] = {" ": 0}
    for line in lines:
        for ch in line.text:
            counts[ch] = counts.get(ch, 0) + 1
    return sorted(counts, key=lambda c: (-counts[c], ord(c)))


def write_charset(charset: list[str], path: Path) -> None:
    """One character per line, UTF-8; line i (0-based) is class i+1 (class 0 is the CTC blank)."""
    path.write_text("".join(ch + "\n" for ch in charset), encoding="utf-8")


def read_charset(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    chars = text.split("\n")
    if chars and chars[-1] == "":
        chars.pop()
    for ch in chars:
        if len(ch) != 1:
            raise ValueError(f"charset entry {ch!r} is not one code point")
    return chars


class ImageStore:
    """Keeps the JPEG bytes in memory (about 170 MB) and decodes per batch: cheaper than a pixel cache.

    From a compact copy (images stored at a lower height) each line is decoded and scaled back to
    SOURCE_HEIGHT x its original width, so the rest of the pipeline (augmentation at 64 px) is the same.
    """

    def __init__(self, images_dir: Path, lines: list[Line]):
        self.sizes: dict[str, tuple[int, int]] = {}
        if is_compact(images_dir):
            self.blobs = {}
            wanted = {line.file: line.width for line in lines}
            for split in ("train", "val"):
                with open(images_dir / f"{split}.tsv", encoding="utf-8", newline="") as f:
                    rows = [r for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if r["file"] in wanted]
                if not rows:
                    continue
                with open(images_dir / f"{split}.pack", "rb") as f:
                    for r in rows:
                        f.seek(int(r["pack_offset"]))
                        self.blobs[r["file"]] = f.read(int(r["pack_length"]))
                        self.sizes[r["file"]] = (int(r["pack_width"]), SOURCE_HEIGHT)
        else:
            self.blobs = {line.file: (images_dir / line.file).read_bytes() for line in lines}

    def load(self, file: str) -> np.ndarray:
        with Image.open(io.BytesIO(self.blobs[file])) as im:
            im = im.convert("L")
            size = self.sizes.get(file)
            if size is not None and im.size != size:
                im = im.resize(size, Image.BILINEAR)
            return np.asarray(im, dtype=np.uint8)


def width_batches(lines: list[Line], max_pixels_width: int, max_batch: int, seed: int, bucket: int = 64) -> list[list[int]]:
    """Indices grouped by similar width (little padding), batch size bounded by total padded width.

    Deterministic for a given seed: the epoch number goes into the seed so that a resumed run
    replays exactly the same batch order.
    """
    rng = random.Random(seed)
    order = list(range(len(lines)))
    rng.shuffle(order)
    # sort within buckets of `bucket` columns of width: widths similar, order still random
    order.sort(key=lambda i: lines[i].width // bucket + rng.random())
    batches: list[list[int]] = []
    current: list[int] = []
    widest = 0
    for i in order:
        w = lines[i].width
        if current and (len(current) >= max_batch or max(widest, w) * (len(current) + 1) > max_pixels_width):
            batches.append(current)
            current, widest = [], 0
        current.append(i)
        widest = max(widest, w)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def save_json(path: Path, value: object) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
