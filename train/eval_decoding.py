"""Validation CER/WER of a checkpoint: greedy decoding against CTC beam search with the char n-gram LM.

    python3 train/eval_decoding.py --checkpoint RUN/best.pt --lm models/hwr-htr-v2/lm.json

The model runs once over the validation lines; decoders then work on the stored log-probabilities.
With --tune, alpha and beta are chosen on the validation documents of even position (split "tune")
and reported on the others (split "test") as well as on the whole set, so the tuned figure is not
measured on the lines it was tuned on.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import make_batch  # noqa: E402
from char_lm import CharNgram  # noqa: E402
from ctc_beam import BeamOptions, beam_search  # noqa: E402
from data import ImageStore, ensure_extracted, read_split, width_batches  # noqa: E402
from metrics import ErrorRate, greedy_decode  # noqa: E402
from model import CRNN, ModelConfig  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def run_model(checkpoint: Path, dataset: Path, cache: Path, limit: int):
    state = torch.load(checkpoint, map_location="cpu")
    cfg = ModelConfig.from_dict(state["model_config"])
    model = CRNN(cfg)
    model.load_state_dict(state["model"])
    model.eval()
    meta = state["meta"]
    images_dir, _ = ensure_extracted(dataset, cache)
    lines = read_split(dataset, "val", images_dir)
    if limit:
        lines = lines[:limit]
    store = ImageStore(images_dir, lines)
    index = {ch: i + 1 for i, ch in enumerate(meta["charset"])}
    results = []  # (line, log_probs (T, C) numpy)
    with torch.no_grad():
        for ids in width_batches(lines, 40000, 32, seed=0):
            b = make_batch([lines[i] for i in ids], store, index, cfg.height, meta["mean"], meta["std"], None, cfg.width_stride)
            out = model(b.images)
            for j, i in enumerate(ids):
                results.append((lines[i], out[j, : int(b.frames[j])].numpy()))
    return results, meta["charset"]


def score(results, decode) -> ErrorRate:
    rate = ErrorRate()
    for line, lp in results:
        rate.add(decode(lp), line.text)
    return rate


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--lm", type=Path, required=True)
    p.add_argument("--lm-model", default="all", help="which model of the LM file ('all', 'en', 'fr', or 'lang' = per line language)")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    p.add_argument("--beam", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--beta", type=float, default=2.0)
    p.add_argument("--tune", action="store_true")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args(argv)

    torch.set_num_threads(2)
    results, charset = run_model(args.checkpoint, args.dataset, args.cache, args.limit)
    doc = json.loads(args.lm.read_text(encoding="utf-8"))
    models = {name: CharNgram.from_json(m, doc["order"]) for name, m in doc["models"].items()}

    def pick_lm(line):
        return models[line.lang] if args.lm_model == "lang" and line.lang in models else models["all" if args.lm_model == "lang" else args.lm_model]

    document_of = documents(args.dataset / "val.tsv")
    doc_ids = sorted({document_of[line.file] for line, _ in results})
    tune_docs = set(doc_ids[::2])
    tune = [r for r in results if document_of[r[0].file] in tune_docs]
    test = [r for r in results if document_of[r[0].file] not in tune_docs]

    report: dict = {}
    greedy = lambda lp: "".join(greedy_decode(torch.from_numpy(lp)[None], [len(lp)], charset))  # noqa: E731
    for name, subset in (("all", results), ("tune", tune), ("test", test)):
        rate = score(subset, greedy)
        report[f"greedy_{name}"] = {"cer": round(rate.cer, 4), "wer": round(rate.wer, 4), "lines": len(subset)}
    print("greedy", report)

    alpha, beta = args.alpha, args.beta
    if args.tune:
        best = None
        for a in (0.3, 0.5, 0.8):
            for b in (0.0, 1.0, 2.0, 3.0):
                opts = BeamOptions(beam=args.beam, alpha=a, beta=b)
                rate = ErrorRate()
                for line, lp in tune:
                    rate.add(beam_search(lp, charset, pick_lm(line), opts), line.text)
                print(f"tune alpha {a} beta {b}: CER {rate.cer:.4f} WER {rate.wer:.4f}", flush=True)
                if best is None or rate.cer < best[0]:
                    best = (rate.cer, a, b)
        _, alpha, beta = best
    opts = BeamOptions(beam=args.beam, alpha=alpha, beta=beta)
    for name, subset in (("all", results), ("tune", tune), ("test", test)):
        started = time.time()
        rate = ErrorRate()
        for line, lp in subset:
            rate.add(beam_search(lp, charset, pick_lm(line), opts), line.text)
        report[f"beam_{name}"] = {"cer": round(rate.cer, 4), "wer": round(rate.wer, 4), "lines": len(subset), "ms_per_line": round(1000 * (time.time() - started) / max(1, len(subset)), 1)}
    per_source: dict[str, dict] = {}
    for source in sorted({line.source for line, _ in results}):
        subset = [r for r in results if r[0].source == source]
        g = score(subset, greedy)
        b = ErrorRate()
        for line, lp in subset:
            b.add(beam_search(lp, charset, pick_lm(line), opts), line.text)
        per_source[source] = {"lines": len(subset), "greedy_cer": round(g.cer, 4), "beam_cer": round(b.cer, 4), "greedy_wer": round(g.wer, 4), "beam_wer": round(b.wer, 4)}
    report["per_source"] = per_source
    report["beam_options"] = {"beam": opts.beam, "alpha": alpha, "beta": beta, "prune": opts.prune, "maxCandidates": opts.max_candidates, "lmModel": args.lm_model}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


def documents(tsv: Path) -> dict[str, str]:
    """file -> hand_or_document of the validation TSV (the val split is by document)."""
    with open(tsv, encoding="utf-8", newline="") as f:
        return {row["file"]: row["hand_or_document"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}


if __name__ == "__main__":
    main(sys.argv[1:])
