"""The character n-gram LM of train/char_lm.py: estimation with and without word lists (weighted
counts), normalisation, the lexicon's word-only counting, and that a spelling no list has keeps
its probability (the lists add knowledge, they never force a word)."""

from __future__ import annotations

import math
import tempfile
import unittest
from pathlib import Path

import support  # noqa: F401  (puts train/ on sys.path)

from char_lm import BOUNDARY, FORMAT, PACKED_MAGIC, CharNgram, count_words, estimate, estimate_kneser_ney, interpolate, read_document, read_lexicon, write_document

LINES = ["the quick brown fox", "the queen quietly quit", "a quiet question", "quite unique", "le quai de la gare", "qu'il était équipé"]


def total_probability(lm: CharNgram, history: str, alphabet: set[str]) -> float:
    return sum(math.exp(lm.logp(history, ch)) for ch in alphabet | {BOUNDARY})


class CharLmTest(unittest.TestCase):
    def test_no_word_list_is_the_plain_model(self) -> None:
        self.assertEqual(estimate(LINES, 4, 1), estimate(LINES, 4, 1, None))
        self.assertEqual(estimate(LINES, 4, 1), estimate(LINES, 4, 1, [(count_words([], 4), 0.5)]))

    def test_words_are_counted_inside_spaces_never_across_words_or_lines(self) -> None:
        counts = count_words(["ab", "cd"], 3)
        self.assertEqual(counts[3], {" ab": 1, "ab ": 1, " cd": 1, "cd ": 1})
        self.assertEqual(counts[2], {" a": 1, "ab": 1, "b ": 1, " c": 1, "cd": 1, "d ": 1})
        self.assertFalse(any(BOUNDARY in g for n in counts[1:] for g in n))

    def test_weighted_model_is_normalised(self) -> None:
        words = ["quietude", "quickly", "question", "quasi", "équipage", "unique"]
        model = estimate(LINES, 4, 1, [(count_words(words, 4), 0.3)])
        lm = CharNgram.from_json(model, 4)
        alphabet = {ch for text in LINES + words for ch in text}
        for history in ("", "the qu", "a quie", "équi", "zzz"):
            self.assertAlmostEqual(total_probability(lm, history, alphabet), 1.0, delta=0.02, msg=history)

    def test_kneser_ney_model_is_normalised_and_leaves_every_context_some_backoff(self) -> None:
        lines = LINES * 3 + ["the quiet queue", "a quick quiz", "unique equity"]
        model = estimate_kneser_ney(lines, 4, 1)
        lm = CharNgram.from_json(model, 4)
        alphabet = {ch for text in lines for ch in text}
        for history in ("", "the qu", "a quie", "équi", "zzz", "the quick brown fox"):
            self.assertAlmostEqual(total_probability(lm, history, alphabet), 1.0, delta=0.01, msg=history)
        # a continuation never seen still gets a probability from the backoff, in every context
        self.assertTrue(all(weight < 0 and weight > -20 for weight in model["backoff"].values()))
        self.assertGreater(lm.logp("the qu", "i"), lm.logp("the qu", "x"))
        # same n-grams as Witten-Bell's, other values
        witten_bell = estimate(lines, 4, 1)
        self.assertEqual(set(model["ngrams"]), set(witten_bell["ngrams"]))
        self.assertNotEqual(model["ngrams"], witten_bell["ngrams"])

    def test_word_list_raises_its_words_and_keeps_other_spellings(self) -> None:
        plain = CharNgram.from_json(estimate(LINES, 4, 1), 4)
        lexicon = CharNgram.from_json(estimate(LINES, 4, 1, [(count_words(["quickly", "quietude"] * 3, 4), 0.5)]), 4)
        self.assertGreater(lexicon.line_logp("the quickly"), plain.line_logp("the quickly"))
        # an old spelling that no list has still gets a finite probability, not far below the plain model's
        old = "qu'il étoit"
        self.assertTrue(math.isfinite(lexicon.line_logp(old)))
        self.assertGreater(lexicon.line_logp(old), plain.line_logp(old) - 2.0)

    def test_lexicon_only_ngrams_are_pruned_by_their_occurrences(self) -> None:
        counts = count_words(["zyxw", "zyxv", "abcd"], 4)
        kept = estimate(LINES, 4, 1, [(counts, 0.1)], 2)["ngrams"]
        self.assertIn(" zy", kept)  # in two words
        self.assertNotIn(" ab", kept)  # in one
        self.assertIn("the", kept)  # the transcriptions' own n-grams stay

    def test_a_gzipped_file_reads_as_the_plain_one_and_is_the_same_bytes_each_time(self) -> None:
        document = {"format": FORMAT, "order": 4, "boundary": BOUNDARY, "models": {"all": estimate(LINES, 4, 1)}}
        with tempfile.TemporaryDirectory() as folder:
            plain, packed, again = Path(folder) / "lm.json", Path(folder) / "lm.json.gz", Path(folder) / "again.json.gz"
            for path in (plain, packed, again):
                write_document(path, document)
            self.assertEqual(packed.read_bytes()[:2], b"\x1f\x8b")
            self.assertLess(packed.stat().st_size, plain.stat().st_size / 2)
            self.assertEqual(packed.read_bytes(), again.read_bytes())
            self.assertEqual(read_document(packed), read_document(plain))
            self.assertEqual(read_document(plain)["models"]["all"]["ngrams"], document["models"]["all"]["ngrams"])

    def test_a_packed_file_reads_back_as_the_same_model_and_is_the_same_bytes_each_time(self) -> None:
        document = {"format": FORMAT, "order": 4, "boundary": BOUNDARY, "logBase": "e",
                    "models": {"all": estimate_kneser_ney(LINES, 4, 1), "fr": estimate_kneser_ney(LINES[4:], 4, 1)}}
        with tempfile.TemporaryDirectory() as folder:
            plain, packed, again = Path(folder) / "lm.bin", Path(folder) / "lm.bin.gz", Path(folder) / "again.bin.gz"
            for path in (plain, packed, again):
                write_document(path, document)
            self.assertTrue(plain.read_bytes().startswith(PACKED_MAGIC))
            self.assertEqual(packed.read_bytes(), again.read_bytes())
            for path in (plain, packed):
                self.assertEqual(read_document(path)["models"], document["models"])
                self.assertEqual(read_document(path)["format"], "hwr-char-ngram/2")

    def test_interpolated_model_is_the_mixture_where_either_model_stores_a_gram_and_is_normalised(self) -> None:
        english = estimate_kneser_ney(LINES[:4] * 2, 4, 1)
        other = estimate_kneser_ney(["quite the quick fox", "a brown queen quietly", "unique question", "the quiet fox"] * 2, 4, 1)
        mixed = interpolate(english, other, 0.7, 4)
        a, b, m = (CharNgram.from_json(x, 4) for x in (english, other, mixed))
        self.assertEqual(set(mixed["ngrams"]), set(english["ngrams"]) | set(other["ngrams"]))
        for history, ch in (("the qu", "i"), ("a brown qu", "e"), ("", "q"), ("the quiet f", "o")):
            exact = math.log(0.7 * math.exp(a.logp(history, ch)) + 0.3 * math.exp(b.logp(history, ch)))
            self.assertAlmostEqual(m.logp(history, ch), exact, delta=2e-3, msg=history + ch)
        # the alphabet both models know (the corpus lines are cut to the transcriptions' alphabet)
        alphabet = {ch for text in LINES[:4] for ch in text}
        for history in ("", "the qu", "a quie", "the quiet f", "zzz"):
            self.assertAlmostEqual(total_probability(m, history, alphabet), 1.0, delta=0.02, msg=history)
        self.assertEqual(interpolate(english, other, 1.0, 4)["ngrams"]["the"], english["ngrams"]["the"])

    def test_read_lexicon(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "words.txt"
            path.write_text("e\u0301tait/n'q'|\nétait po:v\nchat\n1er\n123\nzèbre\n", encoding="utf-8")
            self.assertEqual(read_lexicon(path, set("étaitchz1er")), ["était", "chat", "1er"])


if __name__ == "__main__":
    unittest.main()
