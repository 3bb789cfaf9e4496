"""Data loading of train/: the dataset digest and its extraction cache, the TSV rows, the charset,
the image store (original and compact copy), batching by width and the model-ready batches.
Real handwritten lines from the repository's fixtures (support.py), no ../shared."""

from __future__ import annotations

import contextlib
import io
import tarfile
import tempfile
import unicodedata
import unittest
from pathlib import Path

import support  # noqa: F401  (puts train/ on sys.path)
from support import make_dataset, write_tsv

import numpy as np
import torch
from PIL import Image

import compact_data
from batches import make_batch
from data import (
    SOURCE_HEIGHT,
    ImageStore,
    Line,
    build_charset,
    dataset_digest,
    ensure_extracted,
    is_compact,
    read_charset,
    read_split,
    width_batches,
    write_charset,
)


class DatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name)
        cls.dataset = make_dataset(cls.root)
        cls.images, cls.digest = ensure_extracted(cls.dataset, cls.root / "cache")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_the_digest_covers_every_file_and_changes_with_any_byte(self) -> None:
        self.assertRegex(self.digest, r"^sha256:[0-9a-f]{64}$")
        self.assertEqual(dataset_digest(self.dataset), self.digest)
        copy = self.root / "copy"
        copy.mkdir()
        for path in self.dataset.iterdir():
            (copy / path.name).write_bytes(path.read_bytes())
        self.assertEqual(dataset_digest(copy), self.digest)
        tsv = copy / "val.tsv"
        tsv.write_bytes(tsv.read_bytes().replace(b"zola", b"Zola", 1))
        self.assertNotEqual(dataset_digest(copy), self.digest)

    def test_the_shards_are_unpacked_once_into_a_folder_named_by_the_digest(self) -> None:
        self.assertEqual(self.images, self.root / "cache" / self.digest.split(":")[1][:16])
        self.assertEqual((self.images / ".complete").read_text().strip(), self.digest)
        self.assertEqual(len(list((self.images / "train-000").glob("*.jpg"))), 4)
        self.assertEqual(len(list((self.images / "val-000").glob("*.jpg"))), 3)
        # A second call finds the marker and unpacks nothing: a file removed from the cache stays removed.
        victim = self.images / "val-000" / "000002.jpg"
        kept = victim.read_bytes()
        victim.unlink()
        try:
            self.assertEqual(ensure_extracted(self.dataset, self.root / "cache"), (self.images, self.digest))
            self.assertFalse(victim.exists())
        finally:
            victim.write_bytes(kept)

    def test_a_shard_with_a_member_outside_its_folder_is_refused(self) -> None:
        hostile = self.root / "hostile"
        hostile.mkdir()
        with tarfile.open(hostile / "train-000.tar", "w") as tar:
            info = tarfile.TarInfo("../escaped.jpg")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
        with self.assertRaisesRegex(ValueError, "unexpected tar member"):
            ensure_extracted(hostile, self.root / "hostile-cache")
        self.assertFalse((self.root / "escaped.jpg").exists())

    def test_rows_become_lines_with_their_width_at_64_px(self) -> None:
        lines = read_split(self.dataset, "train", self.images)
        self.assertEqual([line.file for line in lines], [f"train-000/{i:06d}.jpg" for i in range(4)])
        self.assertEqual(lines[0].text, "lations plus tard")
        self.assertEqual(lines[1].text, "Le caractère du mineur : bonhomie et su-")
        for line in lines:
            with Image.open(self.images / line.file) as im:
                self.assertEqual(im.size, (line.width, SOURCE_HEIGHT))
            self.assertEqual((line.source, line.lang), ("zola", "fr"))

    def test_targets_are_text_norm_in_nfc_and_lines_without_text_are_left_out(self) -> None:
        rows = [
            {"file": "train-000/000000.jpg", "text": "x", "text_norm": unicodedata.normalize("NFD", " mineur à la "), "hand_or_document": "a:b", "lang": "fr", "line_type": ""},
            {"file": "missing.jpg", "text": "[illegible]", "text_norm": "  ", "hand_or_document": "a:b", "lang": "fr", "line_type": ""},
        ]
        write_tsv(self.root / "odd.tsv", rows)
        lines = read_split(self.root, "odd", self.images)
        self.assertEqual([line.text for line in lines], ["mineur à la"])
        self.assertTrue(unicodedata.is_normalized("NFC", lines[0].text))

    def test_a_line_image_of_another_height_is_refused(self) -> None:
        Image.new("L", (100, 50), 255).save(self.root / "short.jpg")
        write_tsv(self.root / "short.tsv", [{"file": "short.jpg", "text_norm": "abc", "hand_or_document": "a", "lang": "en", "line_type": ""}])
        with self.assertRaisesRegex(ValueError, "height 50, expected 64"):
            read_split(self.root, "short", self.root)

    def test_the_charset_holds_every_target_character_by_frequency_and_round_trips(self) -> None:
        lines = read_split(self.dataset, "train", self.images)
        charset = build_charset(lines)
        counts = {ch: sum(line.text.count(ch) for line in lines) for ch in charset}
        self.assertEqual(set(charset), set("".join(line.text for line in lines)) | {" "})
        self.assertEqual(charset, sorted(charset, key=lambda ch: (-counts[ch], ord(ch))))
        self.assertEqual(len(charset), len(set(charset)))
        path = self.root / "charset.txt"
        write_charset(charset, path)
        self.assertEqual(read_charset(path), charset)
        path.write_text("a\nbc\n", encoding="utf-8")
        with self.assertRaisesRegex(ValueError, "not one code point"):
            read_charset(path)

    def test_the_image_store_decodes_each_line_to_grey_levels(self) -> None:
        lines = read_split(self.dataset, "val", self.images)
        store = ImageStore(self.images, lines)
        for line in lines:
            pixels = store.load(line.file)
            self.assertEqual((pixels.dtype, pixels.shape), (np.dtype(np.uint8), (SOURCE_HEIGHT, line.width)))
            with Image.open(self.images / line.file) as im:
                np.testing.assert_array_equal(pixels, np.asarray(im.convert("L")))
            # ink on paper: strokes well darker than the background
            self.assertLess(int(pixels.min()), int(np.median(pixels)) - 60)

    def test_a_compact_copy_reads_as_the_original(self) -> None:
        compact = self.root / "compact"
        with contextlib.redirect_stdout(io.StringIO()):
            compact_data.main(["--dataset", str(self.dataset), "--out", str(compact), "--height", "40", "--quality", "80"])
        self.assertTrue(is_compact(compact))
        self.assertEqual(ensure_extracted(compact, self.root / "unused"), (compact, self.digest))
        self.assertFalse((self.root / "unused").exists())
        for split in ("train", "val"):
            original = read_split(self.dataset, split, self.images)
            copied = read_split(compact, split, compact)
            self.assertEqual(copied, original)
            store, source = ImageStore(compact, copied), ImageStore(self.images, original)
            for line in copied:
                pixels = store.load(line.file)
                self.assertEqual(pixels.shape, (SOURCE_HEIGHT, line.width))
                # scaled down to 40 px and back: close to the original, not equal
                difference = np.abs(pixels.astype(np.int16) - source.load(line.file).astype(np.int16)).mean()
                self.assertLess(difference, 12, line.file)


class BatchingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        dataset = make_dataset(root)
        images, _ = ensure_extracted(dataset, root / "cache")
        cls.lines = read_split(dataset, "train", images) + read_split(dataset, "val", images)
        cls.store = ImageStore(images, cls.lines)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_width_batches_hold_every_line_once_within_their_bounds_and_repeat_for_a_seed(self) -> None:
        many = [Line(f"{i}.jpg", "t", "s", "fr", "", width) for i, width in enumerate([40, 900, 300, 310, 120, 800, 64, 500, 505, 70] * 3)]
        batches = width_batches(many, max_pixels_width=1600, max_batch=4, seed=7)
        self.assertEqual(sorted(i for batch in batches for i in batch), list(range(len(many))))
        for batch in batches:
            self.assertLessEqual(len(batch), 4)
            if len(batch) > 1:
                self.assertLessEqual(max(many[i].width for i in batch) * len(batch), 1600)
        self.assertEqual(width_batches(many, 1600, 4, seed=7), batches)
        self.assertNotEqual(width_batches(many, 1600, 4, seed=8), batches)

    def test_an_evaluation_batch_is_padded_white_to_whole_frames_and_normalised(self) -> None:
        charset = build_charset(self.lines[:4])  # the val lines may hold characters the train lines lack
        index = {ch: i + 1 for i, ch in enumerate(charset)}
        height, stride, mean, std = 32, 2, 0.8, 0.2
        group = self.lines[:3]
        batch = make_batch(group, self.store, index, height, mean, std, None, stride)
        n, channels, h, w = batch.images.shape
        self.assertEqual((n, channels, h), (3, 1, height))
        self.assertEqual(w % stride, 0)
        widest = max(line.width for line in group) * height // SOURCE_HEIGHT
        self.assertTrue(widest <= w < widest + 2 * stride, (widest, w))
        self.assertEqual(batch.widths, [round(line.width * height / SOURCE_HEIGHT) for line in group])
        self.assertEqual(batch.frames.tolist(), [width // stride for width in batch.widths])
        # white padding right of each narrower line, normalised like the image
        white = (1.0 - mean) / std
        narrowest = min(range(3), key=lambda i: batch.widths[i])
        padding = batch.images[narrowest, 0, :, batch.widths[narrowest] + 1 :]
        self.assertTrue(torch.allclose(padding, torch.full_like(padding, white)))
        self.assertEqual(batch.texts, [line.text for line in group])
        self.assertEqual(batch.target_lengths.tolist(), [len(line.text) for line in group])
        self.assertEqual(batch.targets.tolist(), [index[ch] for line in group for ch in line.text])
        # characters outside the charset are dropped from the target
        unknown = [line for line in self.lines[4:] if any(ch not in index for ch in line.text)]
        if unknown:
            other = make_batch(unknown[:1], self.store, index, height, mean, std, None, stride)
            self.assertEqual(other.target_lengths.tolist(), [sum(ch in index for ch in unknown[0].text)])

    def test_a_training_batch_is_augmented_and_repeats_for_a_generator_seed(self) -> None:
        index = {ch: i + 1 for i, ch in enumerate(build_charset(self.lines))}
        first = make_batch(self.lines[:2], self.store, index, 32, 0.8, 0.2, torch.Generator().manual_seed(3), 2)
        again = make_batch(self.lines[:2], self.store, index, 32, 0.8, 0.2, torch.Generator().manual_seed(3), 2)
        plain = make_batch(self.lines[:2], self.store, index, 32, 0.8, 0.2, None, 2)
        self.assertTrue(torch.equal(first.images, again.images))
        self.assertFalse(first.images.shape == plain.images.shape and torch.allclose(first.images, plain.images))
        self.assertEqual(first.texts, plain.texts)

    def test_an_evaluation_batch_made_bitonal_is_ink_and_paper_averaged_to_the_model_height(self) -> None:
        index = {ch: i + 1 for i, ch in enumerate(build_charset(self.lines))}
        mean, std = 0.8, 0.2
        grey = make_batch(self.lines[:3], self.store, index, 32, mean, std, None, 2)
        bitonal = make_batch(self.lines[:3], self.store, index, 32, mean, std, None, 2, bitonal_chance=1.0)
        self.assertEqual(bitonal.images.shape, grey.images.shape)
        self.assertEqual(bitonal.frames.tolist(), grey.frames.tolist())
        # 0/1 pixels at the 64 px source, a 2 x 2 mean at 32 px: multiples of a quarter, black and white among them
        levels = bitonal.images * std + mean
        self.assertTrue(torch.allclose(levels * 4, (levels * 4).round(), atol=1e-4))
        self.assertLess(float(levels.min()), 0.01)
        self.assertFalse(torch.allclose(bitonal.images, grey.images))


if __name__ == "__main__":
    unittest.main()
