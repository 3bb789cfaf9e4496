"""The mean of several checkpoints of one architecture (weight averaging, as in SWA), as a checkpoint that
eval_decoding.py and export_onnx.py read.

    python3 train/average_checkpoints.py --out avg.pt RUN/best-slim.pt OTHER/best-slim.pt [--weights 1,2] [--update-bn 2048]

Averaging only makes sense for checkpoints on one training trajectory (e.g. a model and the runs trained on from
it): the mean of two unrelated networks is no network. Batch norms' running statistics are averaged with the
weights; --update-bn N recomputes them instead on N augmented training lines (train mode, cumulative mean), since
the averaged convolutions' outputs need not have the averaged statistics.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint_from_onnx import calibration_batches  # noqa: E402
from model import CRNN, ModelConfig  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def average_states(states: list[dict], weights: list[float]) -> dict:
    """Weighted mean of the models' float tensors; integer tensors (batch counts) come from the first."""
    configs = {str({k: v for k, v in s["model_config"].items() if k != "dropout"}) for s in states}
    if len(configs) != 1:
        raise SystemExit(f"checkpoints of different architectures: {sorted(configs)}")
    charsets = {"".join(s["meta"]["charset"]) for s in states}
    if len(charsets) != 1:
        raise SystemExit("checkpoints with different charsets")
    total = sum(weights)
    out = {}
    for name, first in states[0]["model"].items():
        if not first.is_floating_point():
            out[name] = first.clone()
            continue
        acc = torch.zeros_like(first, dtype=torch.float64)
        for state, w in zip(states, weights):
            acc += state["model"][name].double() * (w / total)
        out[name] = acc.to(first.dtype)
    return out


def provenance(path: Path, weight: float, state: dict) -> dict:
    """What the manifest records of one averaged checkpoint (its own val CER is on the data it was trained with)."""
    meta = state["meta"]
    record = {"checkpoint": str(path), "weight": weight, "epochs": state.get("epochs_done", state.get("epoch")), "trainingCommit": meta.get("training_commit")}
    if "rebuilt_from_onnx" in meta:
        record["rebuiltFromOnnx"] = meta["rebuilt_from_onnx"]["model"]
    if "initialised_from" in meta:
        record["initialisedFrom"] = meta["initialised_from"]["checkpoint"]
    if state.get("val_cer") is not None:
        record["validationCer"] = round(state["val_cer"], 4)
    return record


def update_batch_norms(model: CRNN, batches: list[torch.Tensor]) -> None:
    """Running statistics of every batch norm recomputed as the plain mean over these batches (train mode)."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = {}
    for norm in norms:
        norm.reset_running_stats()
        momenta[norm] = norm.momentum
        norm.momentum = None
    model.train()
    with torch.no_grad():
        for images in batches:
            model(images)
    for norm in norms:
        norm.momentum = momenta[norm]
    model.eval()


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", type=Path, nargs="+")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--weights", help="comma-separated weight per checkpoint (default: equal)")
    p.add_argument("--update-bn", type=int, default=0, metavar="LINES", help="recompute batch-norm statistics on this many augmented training lines")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    states = [torch.load(path, map_location="cpu", weights_only=False) for path in args.checkpoints]
    weights = [float(w) for w in args.weights.split(",")] if args.weights else [1.0] * len(states)
    if len(weights) != len(states) or min(weights) < 0 or sum(weights) <= 0:
        raise SystemExit("--weights needs one non-negative weight per checkpoint, not all zero")
    averaged = average_states(states, weights)
    cfg = ModelConfig.from_dict(states[0]["model_config"])
    model = CRNN(cfg)
    model.load_state_dict(averaged)
    if args.update_bn:
        meta = states[0]["meta"]
        batches = calibration_batches(args.dataset, args.cache, args.update_bn, cfg, meta["charset"], meta["mean"], meta["std"], seed=23)
        update_batch_norms(model, batches)
    out = {key: value for key, value in states[-1].items() if key not in ("optimizer", "model")}
    out["model"] = model.state_dict()
    out["meta"] = {
        **states[-1]["meta"],
        "averaged_from": [provenance(path, w, s) for path, w, s in zip(args.checkpoints, weights, states)],
        "batch_norm_lines": args.update_bn,
    }
    out["val_cer"] = out["val_wer"] = None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, args.out)
    print(f"{args.out}: mean of {len(states)} checkpoints, weights {weights}, batch norms {'recomputed on ' + str(args.update_bn) + ' lines' if args.update_bn else 'averaged'}")


if __name__ == "__main__":
    main(sys.argv[1:])
