"""What the train/ tests share: the train/ folder on sys.path, and a tiny htr-lines dataset made of
real handwritten lines from the repository's own fixtures (no ../shared needed).

The lines are the first text lines of test/fixtures/export/cremma19_zola_f207.jpg (Émile Zola,
CREMMA-MSS-19, CC-BY 4.0; test/fixtures/README.md), cut at their ALTO boxes and scaled to the
dataset's 64 px height, with the ALTO transcription as text. The dataset has the layout of
../shared/datasets/htr-lines: `<split>-000.tar` shards of JPEG lines and `<split>.tsv` rows.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

TRAIN = Path(__file__).resolve().parent.parent
REPO = TRAIN.parent
sys.path.insert(0, str(TRAIN))
# The project's Node 24 (`npm install` brings it) first on the PATH, before export_onnx picks its
# `node`: the export check and the manifest check run there, whatever Node the machine has.
if (REPO / "node_modules" / ".bin" / "node").exists():
    os.environ["PATH"] = f"{REPO / 'node_modules' / '.bin'}{os.pathsep}{os.environ.get('PATH', '')}"

from PIL import Image  # noqa: E402

from data import SOURCE_HEIGHT  # noqa: E402
from line_shards import COLUMNS  # noqa: E402

PAGE = REPO / "test" / "fixtures" / "export" / "cremma19_zola_f207.jpg"
ALTO = PAGE.with_suffix(".xml")


def fixture_lines(count: int) -> list[tuple[Image.Image, str, str]]:
    """The first `count` text lines of the fixture page: (grey image at 64 px height, text, ALTO line id)."""
    root = ET.parse(ALTO).getroot()
    lines = []
    with Image.open(PAGE) as page:
        page = page.convert("L")
        for element in root.iter():
            if not element.tag.endswith("TextLine"):
                continue
            words = [s.get("CONTENT", "") for s in element.iter() if s.tag.endswith("String")]
            text = " ".join(w for w in words if w).strip()
            if not text:
                continue
            x, y, w, h = (int(float(element.get(k))) for k in ("HPOS", "VPOS", "WIDTH", "HEIGHT"))
            crop = page.crop((x, y, x + w, y + h))
            width = max(16, round(w * SOURCE_HEIGHT / h))
            lines.append((crop.resize((width, SOURCE_HEIGHT), Image.LANCZOS), text, element.get("ID", "")))
            if len(lines) == count:
                break
    if len(lines) < count:
        raise RuntimeError(f"{ALTO} has only {len(lines)} text lines")
    return lines


def make_dataset(root: Path, train: int = 4, val: int = 3) -> Path:
    """Writes a tiny htr-lines dataset under root/htr-lines and returns its folder."""
    dataset = root / "htr-lines"
    dataset.mkdir(parents=True)
    lines = fixture_lines(train + val)
    for split, chosen in (("train", lines[:train]), ("val", lines[train:])):
        rows = []
        with tarfile.open(dataset / f"{split}-000.tar", "w") as tar:
            for i, (image, text, line_id) in enumerate(chosen):
                name = f"{split}-000/{i:06d}.jpg"
                buffer = io.BytesIO()
                image.save(buffer, format="JPEG", quality=90)
                info = tarfile.TarInfo(name)
                info.size = buffer.tell()
                buffer.seek(0)
                tar.addfile(info, buffer)
                rows.append(
                    {
                        "file": name,
                        "text": text,
                        "text_norm": text,
                        "source_repo": "HTR-United/CREMMA-MSS-19",
                        "source_page": "data/manuscrit-zola-misc/f207.xml",
                        "licence": "CC-BY-4.0",
                        "hand_or_document": "zola:f207",
                        "lang": "fr",
                        "line_type": "",
                        "source_line_id": line_id,
                    }
                )
        write_tsv(dataset / f"{split}.tsv", rows)
    return dataset


def write_tsv(path: Path, rows: list[dict[str, str]]) -> None:
    """As the dataset writes them: tab-separated, a header, no quoting."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def write_decoding_report(path: Path) -> Path:
    """An eval_decoding.py --json report as export_onnx.py --decoding reads it: greedy CER 0.4 / WER 0.8, beam 0.3 / 0.6, not tuned."""
    beam = {"cer": 0.3, "wer": 0.6, "lines": 2}
    greedy = {"cer": 0.4, "wer": 0.8, "lines": 2}
    path.write_text(json.dumps({"greedy_all": greedy, "beam_all": beam, "beam_test": beam, "beam_options": {"beam": 10, "alpha": 0.5, "beta": 1.5}}))
    return path


@contextlib.contextmanager
def captured_output() -> Iterator[io.StringIO]:
    """Everything written to stdout and stderr meanwhile, child processes' included (file descriptors 1 and 2)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    captured = io.StringIO()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
                yield captured
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            captured.write(sink.read().decode("utf-8", "replace"))


def node() -> str | None:
    """The Node that runs train/check-onnx.mjs (onnxruntime-node, as the service), when there is one with the project's modules."""
    from export_onnx import NODE

    found = str(NODE) if NODE.exists() else shutil.which(str(NODE))
    if not found or not (REPO / "node_modules" / "onnxruntime-node").exists():
        return None
    return found


def run_node(args: list[str]) -> subprocess.CompletedProcess:
    found = node()
    assert found is not None
    return subprocess.run([found, *args], cwd=REPO, capture_output=True, text=True, env={**os.environ, "LOG_LEVEL": "silent"})


class TinyDatasetCase(unittest.TestCase):
    """A test class over the tiny dataset (6 training and 2 validation lines), unpacked, with its charset, its
    image store and its pixel statistics at height 32: what tests of small real CRNNs need."""

    HEIGHT = 32

    @classmethod
    def setUpClass(cls) -> None:
        from batches import pixel_statistics
        from data import ImageStore, build_charset, ensure_extracted, read_split

        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name)
        cls.dataset = make_dataset(cls.root, train=6, val=2)
        cls.cache = cls.root / "cache"
        images, cls.digest = ensure_extracted(cls.dataset, cls.cache)
        cls.train_lines = read_split(cls.dataset, "train", images)
        cls.val_lines = read_split(cls.dataset, "val", images)
        cls.charset = build_charset(cls.train_lines)
        cls.index = {ch: i + 1 for i, ch in enumerate(cls.charset)}
        cls.store = ImageStore(images, cls.train_lines + cls.val_lines)
        cls.mean, cls.std = pixel_statistics(cls.train_lines, cls.store, cls.HEIGHT)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()
