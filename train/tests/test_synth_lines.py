"""Synthetic lines (synth_lines.py) rendered in a real handwriting font from test/fixtures/fonts, from the
tiny dataset of support.py: an htr-lines-shaped folder that train.py reads with --extra-train."""

from __future__ import annotations

import csv
import tarfile
import tempfile
import unittest
from pathlib import Path

import numpy as np
from PIL import ImageFont
from support import REPO, make_dataset

from data import SOURCE_HEIGHT, ensure_extracted, read_split
from line_shards import COLUMNS
from synth_lines import Coverage, Font, render_line, synthesise

FONT = REPO / "test" / "fixtures" / "fonts" / "Kristi.ttf"


class SynthLinesTest(unittest.TestCase):
    def test_a_folder_of_lines_train_py_can_read(self):
        with tempfile.TemporaryDirectory() as tmp:
            dataset = make_dataset(Path(tmp) / "lines", train=4, val=1)
            out = Path(tmp) / "synth"
            per_font = synthesise(dataset, out, 6, seed=1, font_paths=[FONT])
            self.assertEqual(per_font, {"Kristi.ttf": 6})
            with open(out / "train.tsv", encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
            self.assertEqual(list(rows[0].keys()), COLUMNS)
            with open(dataset / "train.tsv", encoding="utf-8", newline="") as f:
                texts = {r["text_norm"].strip() for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
            self.assertTrue(all(r["text_norm"] in texts and r["line_type"] == "Synthetic" for r in rows), "only training texts, marked synthetic")
            images_dir, _ = ensure_extracted(out, Path(tmp) / "cache")
            lines = read_split(out, "train", images_dir)  # checks every image is SOURCE_HEIGHT high
            self.assertEqual(len(lines), 6)
            self.assertTrue(all(line.source == "synth" for line in lines))
            with tarfile.open(out / "train-000.tar") as tar:
                self.assertEqual(len(tar.getmembers()), 6)
            again = Path(tmp) / "again"
            synthesise(dataset, again, 6, seed=1, font_paths=[FONT])
            self.assertEqual((out / "train-000.tar").read_bytes(), (again / "train-000.tar").read_bytes(), "a line is a function of its seed")
            in_workers = Path(tmp) / "in-workers"
            synthesise(dataset, in_workers, 6, seed=1, font_paths=[FONT], workers=2)
            self.assertEqual((out / "train-000.tar").read_bytes(), (in_workers / "train-000.tar").read_bytes(), "the same folder from worker processes")
            self.assertEqual((out / "train.tsv").read_bytes(), (in_workers / "train.tsv").read_bytes())

    def test_a_rendered_line_is_dark_writing_on_white_at_the_dataset_height(self):
        image = render_line("quelques mots écrits", FONT, np.random.default_rng(3))
        pixels = np.asarray(image)
        self.assertEqual(image.height, SOURCE_HEIGHT)
        self.assertGreater(image.width, 2 * SOURCE_HEIGHT, "twenty characters are a wide line")
        self.assertLess(pixels.min(), 100)
        self.assertGreater(np.median(pixels), 200)

    def test_coverage_finds_the_characters_a_font_lacks(self):
        coverage = Coverage(ImageFont.truetype(str(FONT), 72))
        self.assertTrue(coverage.covers("Une lettre, écrite à l'encre."))
        self.assertFalse(coverage.has("\u4e2d"), "no CJK in a Latin script font")
        self.assertFalse(coverage.covers("un mot \u4e2d"))

    def test_a_capitals_only_font_says_its_text_in_capitals(self):
        self.assertEqual(Font(FONT, "fonts-bwht", "OFL-1.1").text_for("Été à Paris"), "ÉTÉ À PARIS")
        self.assertEqual(Font(FONT, "fonts-kristi", "OFL-1.1").text_for("Été à Paris"), "Été à Paris")


if __name__ == "__main__":
    unittest.main()
