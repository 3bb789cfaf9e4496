"""Rebuild a PyTorch training checkpoint from a shipped model directory's rec.onnx.

    python3 train/checkpoint_from_onnx.py --model models/hwr-htr-v3 --out /work/cache/hwr-train/v3/from-onnx.pt

The checkpoints of the runs are not in the repository (v3's stayed on the machine that trained it),
but the exported network is: every weight is an initializer of rec.onnx. This script reads them back
into model.py's CRNN so that a run can start from the shipped model (`train.py --init-from`,
`eval_decoding.py --checkpoint`) instead of from scratch, which matters when a GPU session has
15 minutes.

What the export changed, and how it is undone:
- the architecture is read off the graph (conv channels, projection width, temporal blocks and their
  kernel, LSTM layers and units, classes, the width stride from the pooling); the input height,
  normalisation and charset come from the manifest;
- the LSTM weights are in ONNX's gate order (i, o, f, c) and biases; PyTorch's is (i, f, g, o);
- each batch norm was folded into the convolution before it (conv weight scaled, a bias added). The
  folded weights go into the convolution and the batch norm is re-derived so that the network stays
  the same function in eval mode exactly, whatever statistics it is given, while in train mode (batch
  statistics) it starts where the shipped model is: its running mean and variance are those of the
  convolution's output on augmented training batches (`--calibration-lines`), its scale undoes the
  variance and its shift restores the folded bias plus the mean.

The proof, as for an export: real validation lines go through the rebuilt model (eval mode) and
through the original rec.onnx in onnxruntime-node (`--check-in python`: Python's onnxruntime, on the
GPU machine); the script fails unless they agree to 1e-3 and
greedy decoding gives identical text.
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
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import make_batch  # noqa: E402
from data import ImageStore, ensure_extracted, read_charset, read_split, width_batches  # noqa: E402
from export_onnx import check_with_onnxruntime, onnxruntime_node_outputs, onnxruntime_python_outputs, parity_inputs  # noqa: E402
from model import CRNN, ModelConfig, count_parameters, pools  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# PyTorch's LSTM gate blocks (i, f, g, o) taken from ONNX's (i, o, f, c)
ONNX_GATE_FOR_TORCH = (0, 2, 3, 1)


def _initializers(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in graph.initializer}


def _attribute(node: onnx.NodeProto, name: str):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return None


def read_graph(onnx_path: Path) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[list[np.ndarray]], tuple[np.ndarray, np.ndarray], int]:
    """(conv weights and biases in graph order, classifier excluded), (per LSTM node: W, R, B), (classifier weight,
    bias), width stride."""
    graph = onnx.load(str(onnx_path)).graph
    weights = _initializers(graph)
    convs, lstms, width_pools = [], [], []
    for node in graph.node:
        if node.op_type == "Conv":
            convs.append((weights[node.input[1]], weights[node.input[2]] if len(node.input) > 2 and node.input[2] else None))
        elif node.op_type == "LSTM":
            if _attribute(node, "direction") != b"bidirectional":
                raise SystemExit(f"unexpected LSTM direction {_attribute(node, 'direction')!r}")
            lstms.append([weights[node.input[k]] for k in (1, 2, 3)])
        elif node.op_type == "MaxPool":
            width_pools.append(int(_attribute(node, "kernel_shape")[1]))
    classifier = convs.pop()
    if classifier[1] is None or any(b is None for _, b in convs):
        raise SystemExit("expected every convolution to carry a (folded batch-norm) bias")
    return convs, lstms, classifier, int(np.prod(width_pools))


def config_from_graph(convs, lstms, classifier, width_stride: int, height: int) -> ModelConfig:
    encoder = [w for w, _ in convs if w.ndim == 4]
    one_d = [w for w, _ in convs if w.ndim == 3]
    project, temporal = one_d[0], one_d[1:]
    if len(encoder) != len(pools(width_stride)) or project.shape[2] != 1:
        raise SystemExit("the graph is not model.py's CRNN (encoder convolutions or projection do not match)")
    return ModelConfig(
        num_classes=int(classifier[0].shape[0]),
        height=height,
        channels=tuple(int(w.shape[0]) for w in encoder),
        hidden=int(project.shape[0]),
        temporal_layers=len(temporal),
        kernel=int(temporal[0].shape[2]) if temporal else 5,
        width_stride=width_stride,
        recurrent_layers=len(lstms),
        recurrent_hidden=int(lstms[0][1].shape[2]) if lstms else 0,
    )


def _norm_after(model: CRNN) -> list[tuple[nn.Module, nn.Module]]:
    """(convolution, the batch norm folded into it) in the order the export wrote them."""
    pairs = []
    modules = [m for m in model.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.BatchNorm1d, nn.BatchNorm2d))]
    for conv, norm in zip(modules, modules[1:]):
        if isinstance(conv, (nn.Conv1d, nn.Conv2d)) and isinstance(norm, (nn.BatchNorm1d, nn.BatchNorm2d)):
            pairs.append((conv, norm))
    return pairs


def fold_placeholder(norm: nn.Module, bias: np.ndarray) -> torch.Tensor:
    """The batch norm that was folded into its convolution, as the identity plus the folded bias until calibrate()
    re-derives it; returns that bias."""
    folded_bias = torch.from_numpy(bias.copy())
    norm.running_mean.zero_()
    norm.running_var.fill_(1.0 - norm.eps)  # (x - 0) / sqrt(var + eps) = x
    norm.weight.fill_(1.0)
    norm.bias.copy_(folded_bias)
    return folded_bias


def _gates(x: np.ndarray, units: int) -> torch.Tensor:
    blocks = [x[k * units : (k + 1) * units] for k in range(4)]
    return torch.from_numpy(np.concatenate([blocks[k] for k in ONNX_GATE_FOR_TORCH]).copy())


def load_weights(model: CRNN, convs, lstms, classifier) -> list[tuple[nn.Module, nn.Module, torch.Tensor]]:
    """Copies every weight into the model; the batch norms become the identity plus the folded bias for now.
    Returns (conv, norm, folded bias) for calibrate()."""
    pairs = _norm_after(model)
    if len(pairs) != len(convs):
        raise SystemExit(f"{len(convs)} convolutions in the graph, {len(pairs)} conv + batch norm pairs in the model")
    folded = []
    with torch.no_grad():
        for (conv, norm), (weight, bias) in zip(pairs, convs):
            if tuple(conv.weight.shape) != weight.shape:
                raise SystemExit(f"shape mismatch: model {tuple(conv.weight.shape)}, graph {weight.shape}")
            conv.weight.copy_(torch.from_numpy(weight.copy()))
            folded.append((conv, norm, fold_placeholder(norm, bias)))
        if lstms:
            units = model.recurrent.hidden_size
            for layer, (w, r, b) in enumerate(lstms):
                for direction, suffix in enumerate(("", "_reverse")):
                    getattr(model.recurrent, f"weight_ih_l{layer}{suffix}").copy_(_gates(w[direction], units))
                    getattr(model.recurrent, f"weight_hh_l{layer}{suffix}").copy_(_gates(r[direction], units))
                    getattr(model.recurrent, f"bias_ih_l{layer}{suffix}").copy_(_gates(b[direction][: 4 * units], units))
                    getattr(model.recurrent, f"bias_hh_l{layer}{suffix}").copy_(_gates(b[direction][4 * units :], units))
        model.classifier.weight.copy_(torch.from_numpy(classifier[0].copy()))
        model.classifier.bias.copy_(torch.from_numpy(classifier[1].copy()))
    return folded


def calibrate(model: CRNN, folded, batches: list[torch.Tensor]) -> None:
    """Each batch norm gets the mean and variance of its convolution's output on these batches (the model in eval
    mode, i.e. the shipped function), then a scale and shift that make it the same function again."""
    sums = {id(conv): [0.0, 0.0, 0] for conv, _, _ in folded}

    def record(conv, _inputs, output):
        dims = [d for d in range(output.dim()) if d != 1]
        acc = sums[id(conv)]
        acc[0] = acc[0] + output.double().sum(dim=dims)
        acc[1] = acc[1] + (output.double() ** 2).sum(dim=dims)
        acc[2] += output.numel() // output.shape[1]

    hooks = [conv.register_forward_hook(record) for conv, _, _ in folded]
    model.eval()
    with torch.no_grad():
        for images in batches:
            model(images)
    for h in hooks:
        h.remove()
    with torch.no_grad():
        for conv, norm, bias in folded:
            total, squares, count = sums[id(conv)]
            mean = total / count
            var = (squares / count - mean**2).clamp_min(1e-6)
            norm.running_mean.copy_(mean.float())
            norm.running_var.copy_(var.float())
            norm.weight.copy_(torch.sqrt(var + norm.eps).float())
            norm.bias.copy_((bias.double() + mean).float())


def calibration_batches(dataset: Path, cache: Path, lines: int, cfg: ModelConfig, charset: list[str], mean: float, std: float, seed: int) -> list[torch.Tensor]:
    """Augmented training batches, made as train.py makes them (the statistics train-mode batch norm will see)."""
    images_dir, _ = ensure_extracted(dataset, cache)
    train = read_split(dataset, "train", images_dir)
    rng = np.random.default_rng(seed)
    picks = [train[int(i)] for i in rng.choice(len(train), size=min(lines, len(train)), replace=False)]
    store = ImageStore(images_dir, picks)
    index = {ch: i + 1 for i, ch in enumerate(charset)}
    out = []
    for k, batch in enumerate(width_batches(picks, 24000, 32, seed=seed)):
        group = [picks[i] for i in batch]
        known = [line for line in group if all(ch in index for ch in line.text)]
        g = torch.Generator()
        g.manual_seed(seed * 1000 + k)
        out.append(make_batch(known, store, index, cfg.height, mean, std, g, cfg.width_stride).images)
    return out


def rebuild(model_dir: Path, dataset: Path, cache: Path, calibration_lines: int, seed: int = 11) -> dict:
    """The checkpoint (train.py's format, without optimizer state) of model_dir's recognizer."""
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    recognition, training = manifest["recognition"], manifest.get("training", {})
    charset = read_charset(model_dir / recognition["charset"])
    mean, std = float(recognition["mean"][0]), float(recognition["std"][0])
    convs, lstms, classifier, width_stride = read_graph(model_dir / recognition["file"])
    cfg = config_from_graph(convs, lstms, classifier, width_stride, int(recognition["inputHeight"]))
    if cfg.num_classes != len(charset) + 1:
        raise SystemExit(f"{cfg.num_classes} classes in the graph, {len(charset)} characters + blank in the charset")
    model = CRNN(cfg)
    folded = load_weights(model, convs, lstms, classifier)
    calibrate(model, folded, calibration_batches(dataset, cache, calibration_lines, cfg, charset, mean, std, seed))
    model.eval()
    epochs = training.get("epochs", 0)
    return {
        "model": model.state_dict(),
        "model_config": cfg.to_dict(),
        "meta": {
            "dataset_digest": training.get("datasetDigest", ""),
            "training_commit": training.get("trainingCommit", "unknown"),
            "mean": mean,
            "std": std,
            "charset": charset,
            "rebuilt_from_onnx": {"model": f"{manifest['name']} {manifest['version']}", "file": str(model_dir / recognition["file"]), "calibration_lines": calibration_lines},
        },
        "epoch": epochs,
        "epochs_done": epochs,
        "position": 0,
        "val_cer": training.get("validationCer"),
        "val_wer": training.get("validationWer"),
    }


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True, help="a model directory (manifest.json, rec.onnx, charset.txt)")
    p.add_argument("--out", type=Path, required=True, help="the checkpoint to write")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    p.add_argument("--calibration-lines", type=int, default=512, help="augmented training lines for the batch norms' statistics")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--check-in",
        choices=("node", "python"),
        default="node",
        help="the onnxruntime that runs the original rec.onnx for the proof: onnxruntime-node (the service's) or Python's (the GPU machine's)",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    state = rebuild(args.model, args.dataset, args.cache, args.calibration_lines)
    model = CRNN(ModelConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    runner = onnxruntime_node_outputs if args.check_in == "node" else onnxruntime_python_outputs
    cases = parity_inputs(state, args.dataset, args.cache)
    worst = check_with_onnxruntime(model, args.model / "rec.onnx", cases, state["meta"]["charset"], runner)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, args.out)
    print(f"{args.out}: {count_parameters(model)} parameters, {state['model_config']}, max |rebuilt - onnx| {worst:.2e}")


if __name__ == "__main__":
    main(sys.argv[1:])
