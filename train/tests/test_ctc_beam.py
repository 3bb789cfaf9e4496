"""The known-word bonus of ctc_beam.py on the cases test/unit/ctc-beam-search.test.ts checks the service's search with."""

from __future__ import annotations

import json
import math
import unittest

import numpy as np
from support import REPO

from ctc_beam import BeamOptions, beam_search, known_word_bonus, word_of
from lexicon import build

CASES = json.loads((REPO / "test" / "fixtures" / "ctc-beam-search" / "known-words.json").read_text(encoding="utf-8"))


def log_probs(frames: list[dict[str, float]], charset: list[str]) -> np.ndarray:
    out = np.full((len(frames), len(charset) + 1), 1e-30)
    for t, frame in enumerate(frames):
        out[t, 0] = 1 - sum(frame.values())
        for char, p in frame.items():
            out[t, charset.index(char) + 1] = p
    return np.log(out)


class KnownWordBonusTest(unittest.TestCase):
    def test_shared_cases(self) -> None:
        o = CASES["options"]
        words = set(CASES["words"])
        for case in CASES["cases"]:
            with self.subTest(case["name"]):
                lp = log_probs(case["frames"], CASES["charset"])
                plain = BeamOptions(beam=o["beam"], alpha=o["alpha"], beta=o["beta"], prune=o["prune"], max_candidates=o["maxCandidates"])
                self.assertEqual(beam_search(lp, CASES["charset"], None, plain, words), case["plain"])
                bonus = BeamOptions(**{**plain.__dict__, "word_bonus": case["bonus"]})
                self.assertEqual(beam_search(lp, CASES["charset"], None, bonus, words), case["withBonus"])

    def test_words_and_bonus(self) -> None:
        self.assertEqual(word_of("«Chat»,"), "Chat")
        self.assertEqual(word_of("12e"), "")
        self.assertEqual(known_word_bonus("le «Chat»,", {"chat"}, 2.0), 2.0)
        self.assertEqual(known_word_bonus("le chien", {"chat"}, 2.0), 0.0)
        self.assertTrue(math.isclose(known_word_bonus("Chat", {"chat"}, 0.5), 0.5))

    def test_lexicon_of_the_training_lines(self) -> None:
        lexicon = build([("fr", "Le chat, le Chien"), ("en", "The 2 cats."), ("fr", "l'été")])
        self.assertEqual(lexicon, {"en": ["cats", "the"], "fr": ["chat", "chien", "l'été", "le"]})


if __name__ == "__main__":
    unittest.main()
