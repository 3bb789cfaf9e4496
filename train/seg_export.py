"""Export a segmenter checkpoint to ONNX (dynamic height and width) into a model directory, and prove the export.

    /usr/bin/python3 train/seg_export.py --checkpoint /work/cache/seg-train/run1/best.pt --out models/hwr-seg-v1

Writes seg.onnx and manifest.json (model-directory format `hwr-model/1`, docs/recognition.md; the
recognizer is borrowed from ../hwr-htr-v3, so the directory also works as MODEL_DIR on its own).
The proof: real val pages (two sizes) go through PyTorch and through onnxruntime-node
(train/check-onnx.mjs, the runtime the service uses); the script fails unless the maps agree to 1e-3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export_onnx import onnxruntime_node_outputs  # noqa: E402
from seg_data import CHANNELS, load_split  # noqa: E402
from seg_model import STRIDE, LineSegmenter, Probabilities, SegConfig, count_parameters  # noqa: E402
from seg_train import normalise, pad_to_stride  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TOLERANCE = 1e-3


def export(wrapped: Probabilities, onnx_path: Path) -> None:
    """ONNX opset 13 with dynamic height and width, checked by onnx.checker."""
    torch.onnx.export(
        wrapped,
        torch.zeros(1, 1, 512, 384),
        str(onnx_path),
        input_names=["image"],
        output_names=["maps"],
        dynamic_axes={"image": {2: "height", 3: "width"}, "maps": {2: "map_height", 3: "map_width"}},
        opset_version=13,
    )
    onnx.checker.check_model(onnx.load(str(onnx_path)))


def parity_images(pages: list) -> list[torch.Tensor]:
    """Two val pages as the network's input, the second cut to a smaller size (the dynamic axes really work)."""
    images = []
    for i, page in enumerate([pages[0], pages[len(pages) // 2]]):
        image = normalise(pad_to_stride(torch.from_numpy(page.image).float().div(255)[None, None]))
        if i == 1:
            image = image[:, :, : image.shape[2] // 2 // STRIDE * STRIDE, :]
        images.append(image)
    return images


def check_in_onnxruntime(wrapped: Probabilities, onnx_path: Path, images: list[torch.Tensor]) -> float:
    """The largest difference between onnxruntime-node's maps and PyTorch's on these inputs."""
    worst = 0.0
    for image, got in zip(images, onnxruntime_node_outputs(onnx_path, [image.numpy() for image in images])):
        with torch.no_grad():
            want = wrapped(image).numpy()
        worst = max(worst, float(np.abs(got.reshape(want.shape) - want).max()))
    return worst


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-pages")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/seg"))
    p.add_argument("--version", default="1")
    p.add_argument("--crop-height", type=float, default=0.833, help="share of a segmented line's outline height its crop keeps (chosen on val with eval:pages)")
    p.add_argument("--end-threshold", type=float, default=0.5, help="probability of the line-end map that cuts a line (models with an ends channel; chosen on val with eval:pages)")
    p.add_argument("--max-side", type=int, default=None, help="longer page side the service runs the network at (default: the side it was trained at; chosen on val with eval:pages)")
    p.add_argument("--recognition", default="../hwr-htr-v3", help="model directory the manifest borrows recognition from")
    args = p.parse_args(argv)

    state = torch.load(args.checkpoint, map_location="cpu")
    model = LineSegmenter(SegConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    wrapped = Probabilities(model).eval()
    norm = state["normalisation"]
    args.out.mkdir(parents=True, exist_ok=True)
    onnx_path = args.out / "seg.onnx"
    export(wrapped, onnx_path)
    worst = check_in_onnxruntime(wrapped, onnx_path, parity_images(load_split(args.dataset, "val", norm["side"], args.cache)))
    print(f"onnxruntime-node against PyTorch: max |difference| {worst:.2e}")
    if worst > TOLERANCE:
        sys.exit(f"export differs from PyTorch by {worst} > {TOLERANCE}")

    val = state.get("val", {})
    manifest = {
        "format": "hwr-model/1",
        "name": "hwr-seg",
        "version": args.version,
        "about": "Text-line segmenter for handwriting (train/seg_train.py, docs/training.md 'Training the line segmenter'): baseline, line-region and (from version 2) line-end maps, vectorised by src/recognition/layout/vectorise-lines.ts. Recognition is borrowed.",
        "detection": {"model": "builtin"},
        "segmentation": {
            "file": "seg.onnx",
            "channels": 1,
            "mean": [norm["mean"]],
            "std": [norm["std"]],
            "maxSideLength": args.max_side or norm["side"],
            "sizeMultiple": STRIDE,
            "baselineThreshold": 0.5,
            "regionThreshold": 0.5,
            **({"endThreshold": args.end_threshold} if state["model_config"]["outputs"] > 3 else {}),
            "cropHeight": args.crop_height,
        },
        "recognition": {"model": args.recognition},
        "training": {
            "dataset": "htr-pages",
            "epochs": state["epoch"],
            "validationLoss": round(val.get("loss", float("nan")), 5),
            "validationBaselinePixelF1": round(val.get("baseline_f1", float("nan")), 4),
            "validationRegionPixelF1": round(val.get("region_f1", float("nan")), 4),
            **({"validationEndsPixelF1": round(val["ends_f1"], 4)} if "ends_f1" in val else {}),
            **({"validationBitonalLoss": round(val["bitonal_loss"], 5), "validationBitonalBaselinePixelF1": round(val["bitonal_baseline_f1"], 4)} if "bitonal_loss" in val else {}),
            "architecture": f"fully convolutional, encoder {list(state['model_config']['channels'])} (strides 2 to 1/16, dilations 2/4/8), additive decoder to 1/2, outputs " + "/".join(CHANNELS[: state["model_config"]["outputs"]]),
            "parameters": count_parameters(model),
            "onnxMaxAbsDifference": float(f"{worst:.2e}"),
            "settings": {k: state["args"][k] for k in ("epochs", "crop", "batch", "crops_per_page", "lr", "seed", "side", "bitonal") if k in state["args"]},
            **({"initialisedFrom": state["args"]["init_from"]} if state["args"].get("init_from") else {}),
        },
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {onnx_path} ({onnx_path.stat().st_size} bytes) and manifest.json")


if __name__ == "__main__":
    main(sys.argv[1:])
