"""Adds PyTorch's CTC log-likelihoods to a fixture of line frames (train/ctc_fixture.ts writes it).

For each line and text: torch.nn.functional.ctc_loss over the log-softmax of the line's raw
logits, blank as in the fixture, reduction 'none'; the fixture gets `torch` = -loss per text,
the reference test/unit/recognition-ctc-score.test.ts checks src/recognition/decoding/ctc-score.ts
against. Characters are mapped to classes by the fixture's symbols (texts hold none outside them).

    python3 train/ctc_reference.py test/fixtures/ctc-score/lines.json
"""

import base64
import json
import sys

import numpy as np
import torch


def main(path: str) -> None:
    with open(path, encoding="utf-8") as handle:
        fixture = json.load(handle)
    symbols = fixture["classes"]["symbols"]
    blank = fixture["classes"]["blank"]
    index = {symbol: label for label, symbol in enumerate(symbols) if label != blank}
    for line in fixture["lines"]:
        logits = np.frombuffer(base64.b64decode(line["logits"]), dtype=np.float32).reshape(line["steps"], len(symbols))
        log_probs = torch.log_softmax(torch.from_numpy(logits.astype(np.float64)), dim=-1).unsqueeze(1)  # T, N=1, C
        values = []
        for text in line["texts"]:
            labels = [index[character] for character in text]
            loss = torch.nn.functional.ctc_loss(
                log_probs,
                torch.tensor([labels], dtype=torch.long),
                torch.tensor([line["steps"]]),
                torch.tensor([len(labels)]),
                blank=blank,
                reduction="none",
                zero_infinity=False,
            )
            values.append(-float(loss[0]))
        line["torch"] = values
    fixture["reference"] = f"torch {torch.__version__} nn.functional.ctc_loss (float64, reduction none), by train/ctc_reference.py"
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(fixture, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
