"""Validation CER/WER of a checkpoint: greedy decoding against CTC beam search with the char n-gram LM.

    python3 train/eval_decoding.py --checkpoint RUN/best.pt --lm models/hwr-htr-v2/lm.bin.gz

The model runs once over the validation lines; decoders then work on the stored log-probabilities
(--logits-cache FILE keeps them, so that later runs, e.g. for other LMs, skip the model).
With --tune, alpha and beta are chosen on the validation documents of even position (split "tune")
and reported on the others (split "test") as well as on the whole set, so the tuned figure is not
measured on the lines it was tuned on. --compare-lm FILE (repeatable) evaluates other LM files in
the same run by the same protocol (each tuned on its own on the tune half); their figures go under
"compare" in the report, the top-level beam figures are --lm's.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import make_batch  # noqa: E402
from char_lm import CharNgram, read_document  # noqa: E402
from ctc_beam import BeamOptions, beam_search  # noqa: E402
from data import ImageStore, ensure_extracted, read_split, width_batches  # noqa: E402
from metrics import ErrorRate, greedy_decode  # noqa: E402
from model import CRNN, ModelConfig  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def run_model(checkpoint: Path, dataset: Path, cache: Path, limit: int, bitonal: bool = False):
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
            b = make_batch([lines[i] for i in ids], store, index, cfg.height, meta["mean"], meta["std"], None, cfg.width_stride, float(bitonal))
            out = model(b.images)
            for j, i in enumerate(ids):
                results.append((lines[i], out[j, : int(b.frames[j])].numpy()))
    return results, meta["charset"]


def cached_model_run(checkpoint: Path, dataset: Path, cache: Path, limit: int, logits_cache: Path | None, bitonal: bool = False):
    """run_model, or its stored result (keyed by the checkpoint's bytes, the val TSV, the limit and bitonal)."""
    if logits_cache is None:
        return run_model(checkpoint, dataset, cache, limit, bitonal)
    digest = hashlib.sha256()
    for path in (checkpoint, dataset / "val.tsv"):
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(str(limit).encode())
    if bitonal:
        digest.update(b"bitonal")
    key = digest.hexdigest()
    if logits_cache.exists():
        stored = np.load(logits_cache, allow_pickle=False)
        meta = json.loads(str(stored["meta"]))
        if meta["key"] == key:
            images_dir, _ = ensure_extracted(dataset, cache)
            by_file = {line.file: line for line in read_split(dataset, "val", images_dir)}
            results = [(by_file[f], stored[f"lp{i}"]) for i, f in enumerate(meta["files"])]
            print(f"logits from {logits_cache} ({len(results)} lines)", flush=True)
            return results, meta["charset"]
        print(f"{logits_cache} holds another checkpoint's or dataset's logits: running the model", flush=True)
    results, charset = run_model(checkpoint, dataset, cache, limit, bitonal)
    logits_cache.parent.mkdir(parents=True, exist_ok=True)
    meta = {"key": key, "files": [line.file for line, _ in results], "charset": charset}
    with open(logits_cache, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), **{f"lp{i}": lp for i, (_, lp) in enumerate(results)})
    return results, charset


class MemoLM:
    """A CharNgram whose values are remembered by (context, char) across lines: the same numbers, faster."""

    def __init__(self, lm: CharNgram):
        self.lm = lm
        self.order = lm.order
        self.memo: dict[tuple[str, str], float] = {}

    def logp(self, history: str, char: str) -> float:
        # the LM reads the last order-1 characters (a shorter history gets the boundary in front):
        # the tail and its length identify the context
        tail = history[-(self.order - 1) :] if self.order > 1 else ""
        key = (tail, char)
        value = self.memo.get(key)
        if value is None:
            value = self.lm.logp(tail, char)
            self.memo[key] = value
        return value


def load_lms(path: Path) -> dict[str, MemoLM]:
    doc = read_document(path)
    return {name: MemoLM(CharNgram.from_json(m, doc["order"])) for name, m in doc["models"].items()}


def score(results, decode) -> ErrorRate:
    rate = ErrorRate()
    for line, lp in results:
        rate.add(decode(lp), line.text)
    return rate


def figures(rate: ErrorRate, lines: int) -> dict:
    return {"cer": round(rate.cer, 4), "wer": round(rate.wer, 4), "lines": lines}


def evaluate_lm(path: Path, args, charset, results, tune, test, test_files) -> dict:
    models = load_lms(path)

    def pick_lm(line):
        if args.lm_model == "lang":
            return models.get(line.lang, models["all"])
        return models[args.lm_model]

    def beam(subset, opts) -> ErrorRate:
        rate = ErrorRate()
        for line, lp in subset:
            rate.add(beam_search(lp, charset, pick_lm(line), opts), line.text)
        return rate

    report: dict = {"lm": str(path)}
    alpha, beta = args.alpha, args.beta
    if args.tune:
        best = None
        grid = []
        for a in args.alphas:
            for b in args.betas:
                rate = beam(tune, BeamOptions(beam=args.beam, alpha=a, beta=b))
                print(f"{path.name}: tune alpha {a} beta {b}: CER {rate.cer:.4f} WER {rate.wer:.4f}", flush=True)
                grid.append({"alpha": a, "beta": b, "cer": round(rate.cer, 4), "wer": round(rate.wer, 4)})
                if best is None or rate.cer < best[0]:
                    best = (rate.cer, a, b)
        _, alpha, beta = best
        report["tune_grid"] = grid
    opts = BeamOptions(beam=args.beam, alpha=alpha, beta=beta)
    for name, subset in (("all", results), ("tune", tune), ("test", test)):
        started = time.time()
        rate = beam(subset, opts)
        report[f"beam_{name}"] = {**figures(rate, len(subset)), "ms_per_line": round(1000 * (time.time() - started) / max(1, len(subset)), 1)}
    per_source: dict[str, dict] = {}
    for source in sorted({line.source for line, _ in results}):
        subset = [r for r in results if r[0].source == source]
        held_out = [r for r in subset if r[0].file in test_files]
        b, bt = beam(subset, opts), beam(held_out, opts)
        per_source[source] = {"lines": len(subset), "beam_cer": round(b.cer, 4), "beam_wer": round(b.wer, 4),
                              "test_lines": len(held_out), "test_beam_cer": round(bt.cer, 4), "test_beam_wer": round(bt.wer, 4)}
    report["per_source"] = per_source
    report["beam_options"] = {"beam": opts.beam, "alpha": alpha, "beta": beta, "prune": opts.prune, "maxCandidates": opts.max_candidates, "lmModel": args.lm_model}
    print(f"{path}: {json.dumps({k: report[k] for k in ('beam_all', 'beam_tune', 'beam_test', 'beam_options')})}", flush=True)
    return report


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--lm", type=Path, required=True)
    p.add_argument("--compare-lm", type=Path, action="append", default=[], help="another LM file evaluated in the same run (repeatable)")
    p.add_argument("--lm-model", default="all", help="which model of the LM file ('all', 'en', 'fr', or 'lang' = per line language)")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    p.add_argument("--logits-cache", type=Path, help="keep the model's validation log-probabilities in this .npz (reused when it matches)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--beam", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--beta", type=float, default=2.0)
    p.add_argument("--tune", action="store_true")
    p.add_argument("--alphas", type=lambda s: [float(x) for x in s.split(",")], default=[0.3, 0.5, 0.8], help="--tune grid")
    p.add_argument("--betas", type=lambda s: [float(x) for x in s.split(",")], default=[0.0, 1.0, 2.0, 3.0], help="--tune grid")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--bitonal", action="store_true", help="read every line made bitonal first (Sauvola, window 31, k 0.2: batches.make_batch)")
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    results, charset = cached_model_run(args.checkpoint, args.dataset, args.cache, args.limit, args.logits_cache, args.bitonal)

    document_of = documents(args.dataset / "val.tsv")
    doc_ids = sorted({document_of[line.file] for line, _ in results})
    tune_docs = set(doc_ids[::2])
    tune = [r for r in results if document_of[r[0].file] in tune_docs]
    test = [r for r in results if document_of[r[0].file] not in tune_docs]
    test_files = {r[0].file for r in test}

    report: dict = {}
    greedy = lambda lp: "".join(greedy_decode(torch.from_numpy(lp)[None], [len(lp)], charset))  # noqa: E731
    for name, subset in (("all", results), ("tune", tune), ("test", test)):
        report[f"greedy_{name}"] = figures(score(subset, greedy), len(subset))
    print("greedy", report, flush=True)
    greedy_by_source = {}
    for source in sorted({line.source for line, _ in results}):
        subset = [r for r in results if r[0].source == source]
        g = score(subset, greedy)
        gt = score([r for r in subset if r[0].file in test_files], greedy)
        greedy_by_source[source] = {"greedy_cer": round(g.cer, 4), "greedy_wer": round(g.wer, 4), "test_greedy_cer": round(gt.cer, 4), "test_greedy_wer": round(gt.wer, 4)}

    def with_greedy(lm_report: dict) -> dict:
        for source, values in lm_report["per_source"].items():
            values.update(greedy_by_source[source])
        return lm_report

    compare = [with_greedy(evaluate_lm(path, args, charset, results, tune, test, test_files)) for path in args.compare_lm]
    main_report = with_greedy(evaluate_lm(args.lm, args, charset, results, tune, test, test_files))
    report.update(main_report)
    if compare:
        report["compare"] = compare
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


def documents(tsv: Path) -> dict[str, str]:
    """file -> hand_or_document of the validation TSV (the val split is by document)."""
    with open(tsv, encoding="utf-8", newline="") as f:
        return {row["file"]: row["hand_or_document"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}


if __name__ == "__main__":
    main(sys.argv[1:])
