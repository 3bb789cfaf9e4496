"""Rebuild a segmenter training checkpoint from a shipped model directory's seg.onnx.

    /usr/bin/python3 train/seg_checkpoint_from_onnx.py --model models/hwr-seg-v2 --out /work/cache/seg-train/v2.pt

The runs' checkpoints are not in the repository, but the exported network is: every weight is an
initializer of seg.onnx. The export folded each batch norm into the convolution before it (a scaled
weight and a new bias); as for the recognizer (checkpoint_from_onnx.py), the folded weights go into the
convolution and the batch norm is re-derived from the convolution's output on augmented training
crops, so that the network is the same function in eval mode and starts where the shipped model is in
train mode. The ONNX node names carry the module paths (`/model/e1/e1.0/e1.0.0/Conv`), which say which
convolution each weight belongs to and whether a batch norm follows it.

The proof, as for an export: two val pages (two sizes) through the rebuilt model and through the
original seg.onnx in onnxruntime-node; the script fails unless the maps agree to 1e-3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from checkpoint_from_onnx import _initializers, calibrate, fold_placeholder  # noqa: E402
from seg_augment import make_example  # noqa: E402
from seg_data import Page, load_split  # noqa: E402
from seg_export import TOLERANCE, check_in_onnxruntime, parity_images  # noqa: E402
from seg_model import LineSegmenter, Probabilities, SegConfig, count_parameters  # noqa: E402
from seg_train import normalise  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def conv_weights(onnx_path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Module path of each convolution (`e1.0.0`, `l4`, `head`) to its (weight, bias) in the graph."""
    graph = onnx.load(str(onnx_path)).graph
    weights = _initializers(graph)
    convs = {}
    for node in graph.node:
        if node.op_type != "Conv":
            continue
        parts = node.name.strip("/").split("/")
        if parts[0] != "model" or parts[-1] != "Conv" or len(node.input) < 3:
            raise SystemExit(f"unexpected convolution {node.name!r} (expected /model/<module path>/Conv with a bias)")
        convs[parts[-2]] = (weights[node.input[1]], weights[node.input[2]])
    return convs


def load_weights(model: LineSegmenter, convs: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[tuple[nn.Module, nn.Module, torch.Tensor]]:
    """Copies every weight; a convolution without a bias of its own had its batch norm (the next module of its block)
    folded in, which becomes the identity plus the folded bias for now. Returns (conv, norm, folded bias) for calibrate()."""
    modules = dict(model.named_modules())
    model_convs = [name for name, m in modules.items() if isinstance(m, nn.Conv2d)]
    if sorted(model_convs) != sorted(convs):
        raise SystemExit(f"the graph's convolutions {sorted(convs)} are not the model's {sorted(model_convs)}")
    folded = []
    with torch.no_grad():
        for name, (weight, bias) in convs.items():
            conv = modules[name]
            if tuple(conv.weight.shape) != weight.shape:
                raise SystemExit(f"{name}: model {tuple(conv.weight.shape)}, graph {weight.shape}")
            conv.weight.copy_(torch.from_numpy(weight.copy()))
            if conv.bias is not None:
                conv.bias.copy_(torch.from_numpy(bias.copy()))
                continue
            *block, index = name.split(".")
            norm = modules[".".join([*block, str(int(index) + 1)])]
            if not isinstance(norm, nn.BatchNorm2d):
                raise SystemExit(f"{name} has no bias and no batch norm after it")
            folded.append((conv, norm, fold_placeholder(norm, bias)))
    return folded


def calibration_batches(pages: list[Page], crops: int, crop: int, seed: int) -> list[torch.Tensor]:
    """Augmented training crops, made as seg_train.py makes them (the statistics train-mode batch norm will see)."""
    rng = np.random.default_rng(seed)
    images = []
    for k, index in enumerate(rng.choice(len(pages), size=crops, replace=crops > len(pages))):
        image, _ = make_example(pages[int(index)], np.random.default_rng([seed, k]), crop)
        images.append(image)
    return [normalise(torch.stack(images[i : i + 8])) for i in range(0, len(images), 8)]


def trained_side(model_dir: Path) -> int:
    """The longer page side the segmenter was trained at (the service may run it at another, maxSideLength)."""
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    return int(manifest.get("training", {}).get("settings", {}).get("side", manifest["segmentation"]["maxSideLength"]))


def rebuild(model_dir: Path, train_pages: list[Page], crops: int, crop: int = 384, seed: int = 11) -> dict:
    """The checkpoint (seg_train.py's format, without optimizer state) of model_dir's segmenter; the batch norms'
    statistics come from `crops` augmented crops of `train_pages` (rendered at trained_side())."""
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    segmentation, training = manifest["segmentation"], manifest.get("training", {})
    convs = conv_weights(model_dir / segmentation["file"])
    channels = tuple(int(convs[f"e{i}.0.0"][0].shape[0]) for i in range(1, 5))
    cfg = SegConfig(channels=channels, decoder=int(convs["l1"][0].shape[0]), outputs=int(convs["head"][0].shape[0]))
    model = LineSegmenter(cfg)
    folded = load_weights(model, convs)
    calibrate(model, folded, calibration_batches(train_pages, crops, crop, seed))
    model.eval()
    return {
        "model": model.state_dict(),
        "model_config": cfg.to_dict(),
        "normalisation": {"mean": float(segmentation["mean"][0]), "std": float(segmentation["std"][0]), "side": trained_side(model_dir)},
        "epoch": int(training.get("epochs", 0)),
        "args": {"rebuilt_from_onnx": f"{manifest['name']} {manifest['version']}", "calibration_crops": crops, **training.get("settings", {})},
        "val": {
            "loss": training.get("validationLoss"),
            "baseline_f1": training.get("validationBaselinePixelF1"),
            "region_f1": training.get("validationRegionPixelF1"),
            "ends_f1": training.get("validationEndsPixelF1"),
        },
    }


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True, help="a model directory (manifest.json, seg.onnx)")
    p.add_argument("--out", type=Path, required=True, help="the checkpoint to write")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-pages")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/seg"))
    p.add_argument("--calibration-crops", type=int, default=256, help="augmented 384 px training crops for the batch norms' statistics")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    side = trained_side(args.model)
    state = rebuild(args.model, load_split(args.dataset, "train", side, args.cache), args.calibration_crops)
    model = LineSegmenter(SegConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"])
    wrapped = Probabilities(model).eval()
    images = parity_images(load_split(args.dataset, "val", side, args.cache))
    worst = check_in_onnxruntime(wrapped, args.model / "seg.onnx", images)
    if worst > TOLERANCE:
        sys.exit(f"the rebuilt model differs from {args.model / 'seg.onnx'} by {worst} > {TOLERANCE}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, args.out)
    print(f"{args.out}: {count_parameters(model)} parameters, {state['model_config']}, max |rebuilt - onnx| {worst:.2e}")


if __name__ == "__main__":
    main(sys.argv[1:])
