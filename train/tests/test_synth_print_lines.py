"""Synthetic printed lines (synth_print_lines.py) from the tiny dataset of support.py, two of its lines marked
typewritten: the folder finetune.py reads, with the dataset's own printed lines as training and validation lines."""

from __future__ import annotations

import csv
import json
import tempfile
import unittest
from pathlib import Path

import numpy as np
from PIL import Image
from support import REPO, make_dataset, write_tsv

from finetune import read_lines
from synth_print_lines import render_line, synthesise

FONT = REPO / "test" / "fixtures" / "fonts" / "Kristi.ttf"


def mark_printed(dataset: Path, split: str, count: int) -> None:
    """Marks the split's first `count` lines typewritten, as the Stanford letters' lines are."""
    with open(dataset / f"{split}.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    for row in rows[:count]:
        row["line_type"] = "Typewritten"
    write_tsv(dataset / f"{split}.tsv", rows)


class SynthPrintLinesTest(unittest.TestCase):
    def test_a_folder_finetune_reads_with_the_real_printed_lines_as_validation(self):
        with tempfile.TemporaryDirectory() as tmp:
            dataset = make_dataset(Path(tmp) / "lines", train=4, val=2)
            mark_printed(dataset, "train", 1)
            mark_printed(dataset, "val", 1)
            out = Path(tmp) / "print"
            written = synthesise(dataset, out, 5, seed=1, font_paths=[FONT])
            self.assertEqual(written, {"synthetic": 5, "printed train": 1, "printed val": 1})
            items = [json.loads(row) for row in (out / "lines.jsonl").read_text(encoding="utf-8").splitlines()]
            with open(dataset / "train.tsv", encoding="utf-8", newline="") as f:
                train_texts = {r["text_norm"].strip() for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
            synthetic = [item for item in items if item["id"].startswith("synth-")]
            self.assertEqual(len(synthetic), 5)
            for item in synthetic:
                self.assertEqual(item["split"], "train")
                self.assertTrue(all(part in train_texts for part in self.parts(item["text"], train_texts)), "only training texts")
            self.assertEqual([item["split"] for item in items if not item["id"].startswith("synth-")], ["train", "val"])

            lines = read_lines(out / "lines.jsonl", 32)  # what finetune.py trains on, every image at its height
            self.assertEqual(len(lines), 7)
            self.assertTrue(all(line.pixels.shape[0] == 32 for line in lines))
            self.assertEqual([line.split for line in lines].count("val"), 1)

            again = Path(tmp) / "again"
            synthesise(dataset, again, 5, seed=1, font_paths=[FONT])
            self.assertEqual((out / "lines.jsonl").read_bytes(), (again / "lines.jsonl").read_bytes(), "a line is a function of its seed")
            for item in synthetic:
                self.assertEqual((out / item["image"]).read_bytes(), (again / item["image"]).read_bytes())

    def test_a_rendered_line_is_dark_print_on_lighter_paper(self):
        image = render_line("quelques mots imprimés", FONT, np.random.default_rng([3, 0]))
        self.assertIsInstance(image, Image.Image)
        pixels = np.asarray(image)
        self.assertGreater(image.width, 3 * image.height, "twenty characters are a wide line")
        self.assertLess(np.percentile(pixels, 1), np.median(pixels) - 60, "ink darker than the paper")

    def test_a_font_that_lacks_a_character_draws_no_line(self):
        self.assertIsNone(render_line("漢字", FONT, np.random.default_rng([3, 1])))

    @staticmethod
    def parts(text: str, texts: set[str]) -> list[str]:
        """The one or two training texts a synthetic line joins."""
        if text in texts:
            return [text]
        return next(([a, text[len(a) + 1 :]] for a in texts if text.startswith(a + " ") and text[len(a) + 1 :] in texts), [text])


if __name__ == "__main__":
    unittest.main()
