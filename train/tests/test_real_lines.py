"""Real lines from another ground-truth repository (real_lines.py): a bare git mirror holding the
repository's own fixture page (Zola, CREMMA-MSS-19, ALTO v4 with line polygons) is cut into an
htr-lines-shaped folder that train.py reads with --extra-train."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
import unittest
from pathlib import Path

from PIL import Image
from support import ALTO, PAGE

from data import SOURCE_HEIGHT, ensure_extracted, read_split
from line_shards import COLUMNS
from real_lines import Source, alto_lines, check_against_pages, extract, normalise_text

ZOLA = Source("test/zola", "CC-BY 4.0 (test)", "fr", "data/*/*.xml", 2)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_mirror(mirrors: Path, lose_image_of: str | None = None) -> Path:
    """mirrors/test+zola/repo: a bare repository whose HEAD holds the fixture page twice (two folders), and
    without the image blob of `lose_image_of`'s copy, as a snapshot that lacks a large file."""
    work = mirrors / "work"
    for folder in ("f207", "other"):
        (work / "data" / folder).mkdir(parents=True)
        shutil.copy(ALTO, work / "data" / folder / "page.xml")
        shutil.copy(PAGE, work / "data" / folder / "page.jpg")
    (work / "data" / "other" / "page.jpg").write_bytes(PAGE.read_bytes() + b"\0")  # another blob
    git(work.parent, "init", "-q", str(work))
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pages")
    bare = mirrors / "test+zola" / "repo"
    git(mirrors, "clone", "-q", "--bare", str(work), str(bare))
    if lose_image_of:
        blob = git(bare, "rev-parse", f"HEAD:data/{lose_image_of}/page.jpg")
        packs = list((bare / "objects" / "pack").glob("*.pack"))
        if packs:  # a clone packs its objects: unpack them so that one can go
            for pack in packs:
                idx = pack.with_suffix(".idx")
                data = pack.read_bytes()
                pack.unlink()
                idx.unlink()
                subprocess.run(["git", "-C", str(bare), "unpack-objects", "-q"], input=data, check=True)
        (bare / "objects" / blob[:2] / blob[2:]).unlink()
    return bare


class RealLinesTest(unittest.TestCase):
    def test_the_evaluation_normalisation(self):
        # the cases of bench/lib/text-metrics.ts normaliseText
        self.assertEqual(normalise_text("Un >mot< barré <> ici"), "Un mot barré ici")
        self.assertEqual(normalise_text("⟦effacé⟧ et su^p"), "effacé et sup")
        self.assertEqual(normalise_text("« l’an » — deux -- trois"), '" l\'an " - deux - trois')
        self.assertEqual(normalise_text("  la ſuite ,  dit-il ; ( oui ) "), "la suite, dit-il; (oui)")
        self.assertEqual(normalise_text("Bu\u0364cher"), "Bücher")

    def test_a_mirror_cut_into_lines_train_py_can_read(self):
        with tempfile.TemporaryDirectory() as tmp:
            mirrors = Path(tmp)
            bare = make_mirror(mirrors, lose_image_of="other")
            out = mirrors / "lines"
            counts = extract(mirrors, {"zola": ZOLA}, out)["zola"]
            _, (width, height), lines = alto_lines(ALTO.read_bytes())
            texts = [normalise_text(line.text) for line in lines]
            self.assertEqual(counts["pages"], 1)
            self.assertEqual(counts["page image missing from the mirror"], 1)
            kept = counts["lines"]
            self.assertEqual(kept + sum(v for k, v in counts.items() if k.endswith("skipped")), len(lines))
            self.assertGreaterEqual(kept, 20)
            with open(out / "train.tsv", encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
            self.assertEqual(list(rows[0].keys()), COLUMNS)
            self.assertEqual(len(rows), kept)
            commit = subprocess.run(["git", "-C", str(bare), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
            self.assertTrue(all(r["source_repo"] == f"test/zola@{commit}" and r["hand_or_document"] == "zola:data/f207" for r in rows))
            self.assertTrue(all(r["source_page"] == "data/f207/page.xml" and r["licence"] == "CC-BY 4.0 (test)" for r in rows))
            by_id = {line.id: text for line, text in zip(lines, texts)}
            order = [line.id for line in lines]
            self.assertEqual([r["text_norm"] for r in rows], [by_id[r["source_line_id"]] for r in rows])
            self.assertEqual([r["source_line_id"] for r in rows], [i for i in order if i in {r["source_line_id"] for r in rows}], "in the page's order")
            images_dir, _ = ensure_extracted(out, mirrors / "cache")
            read = read_split(out, "train", images_dir)  # fails unless every image is SOURCE_HEIGHT high
            self.assertEqual(len(read), kept)
            # the longest line is cut from its own box: about as wide, for its height, as the ALTO says
            longest = max(lines, key=lambda line: max(x for x, _ in line.polygon) - min(x for x, _ in line.polygon))
            row = next(r for r in rows if r["source_line_id"] == longest.id)
            with Image.open(images_dir / row["file"]) as image:
                self.assertEqual(image.height, SOURCE_HEIGHT)
                xs, ys = [p[0] for p in longest.polygon], [p[1] for p in longest.polygon]
                expected = (max(xs) - min(xs)) * SOURCE_HEIGHT / ((max(ys) - min(ys)) * 1.2)
                self.assertLess(abs(image.width - expected) / expected, 0.1)
                # outside the polygon grown by the margin, the page is white: the top-left corner of the box
                self.assertGreaterEqual(image.convert("L").getpixel((0, 0)), 250)
            self.assertGreater(width, 0)
            self.assertGreater(height, 0)

    def test_a_page_of_htr_pages_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            mirrors = Path(tmp)
            make_mirror(mirrors)
            pages = mirrors / "htr-pages"
            pages.mkdir()
            with tarfile.open(pages / "val-000.tar", "w") as tar:
                record = json.dumps({"page": "x", "source_image_sha256": hashlib.sha256(PAGE.read_bytes()).hexdigest()}).encode()
                info = tarfile.TarInfo("x.json")
                info.size = len(record)
                tar.addfile(info, io.BytesIO(record))
            self.assertEqual(check_against_pages(mirrors, {"zola": ZOLA}, pages), 1)  # data/f207 is that page; data/other is not


if __name__ == "__main__":
    unittest.main()
