"""Quantise a recognizer trained by train/ to 8-bit integers (its convolutions), for the CPU, and prove it on real lines.

    /usr/bin/python3 train/quantize_int8.py --model models/hwr-htr-v3 --dataset ../shared/datasets/htr-lines

Writes MODEL/rec.int8.onnx beside MODEL/rec.onnx, points the manifest's recognition.file at it and
gives the model the version VERSION-int8 (its readings differ from float32's); recognition.float32File
keeps naming rec.onnx and quantization.fromVersion its version: fine-tuning starts from those
(train/finetune.py, whose model is float32 unless it is given --quantize: then it is quantised as here, by
write_quantised and reading_check).
On these machines' cores onnxruntime runs the quantised recognizer in about two thirds of the time
(docs/recognition.md, "An 8-bit recognizer"; ADR 0045). What it does, in onnxruntime's own formats:

- Convolutions (all but the first, whose one input channel is a small share of the work): static
  quantisation in QDQ form (QuantizeLinear/DequantizeLinear around each, which onnxruntime fuses
  into QLinearConv). Activations are uint8, their ranges the smallest and largest values seen on
  --calibration-lines training lines (train/onnx-ranges.mjs, in onnxruntime-node); a convolution
  followed by a ReLU is quantised after it (range from 0). Weights are int8 per output channel.
- LSTMs stay float32. onnxruntime's DynamicQuantizeLSTM would take another third off the model's time, but it
  quantises its input with one scale for the whole batch, found as it runs, so that a line would read
  differently with different lines batched beside it (ADR 0045).
- Weights use 7 of the 8 bits (at most 63 in magnitude: onnxruntime's "reduce range"): on x86 cores
  without VNNI the uint8 x int8 products are summed in pairs into 16 bits, which full-range weights
  can saturate.

The proof: --check-lines validation lines through rec.onnx and the quantised model in onnxruntime-node;
greedy CER against the ground truth of both is printed and kept in the manifest, and the script fails
when the quantised model reads them worse by more than --max-cer-rise points.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import make_batch  # noqa: E402
from data import ImageStore, ensure_extracted, read_charset, read_split  # noqa: E402
from export_onnx import NODE, REPO, onnxruntime_node_outputs  # noqa: E402
from metrics import ErrorRate, greedy_decode  # noqa: E402

QUANTISED_FILE = "rec.int8.onnx"
WEIGHT_LEVELS = 63  # 7 bits: see the module's docstring


def float_file(recognition: dict) -> str:
    """The recognizer's float32 file: the one it runs, unless that is a quantised copy written here."""
    return recognition.get("float32File", recognition["file"])


def float_version(manifest: dict) -> str:
    """The version of the model's float32 weights (a quantised model names the version it was quantised from)."""
    return manifest.get("quantization", {}).get("fromVersion", manifest["version"])


def quantisable_convolutions(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """Convolutions with constant weights, except the graph's first."""
    weights = {init.name for init in graph.initializer}
    convolutions = [node for node in graph.node if node.op_type == "Conv" and node.input[1] in weights]
    return convolutions[1:]


def sole_relu(graph: onnx.GraphProto, tensor: str) -> onnx.NodeProto | None:
    """The ReLU that alone reads `tensor` (which is no graph output): quantised after it, the tensor itself goes."""
    if any(output.name == tensor for output in graph.output):
        return None
    consumers = [node for node in graph.node if tensor in node.input]
    return consumers[0] if len(consumers) == 1 and consumers[0].op_type == "Relu" else None


def probed_tensors(graph: onnx.GraphProto) -> list[str]:
    """The tensors whose ranges calibration needs: each quantised convolution's input and output."""
    names: list[str] = []
    for node in quantisable_convolutions(graph):
        for name in (node.input[0], node.output[0]):
            if name not in names:
                names.append(name)
    return names


def probe_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the model with every tensor calibration needs among its outputs."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    outputs = {output.name for output in probe.graph.output}
    for name in probed_tensors(probe.graph):
        if name not in outputs:
            probe.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    return probe


def activation_quantisation(low: float, high: float) -> tuple[float, int]:
    """uint8 scale and zero point covering [low, high] (widened to hold 0, which must be exact)."""
    low, high = min(low, 0.0), max(high, 0.0)
    scale = max((high - low) / 255.0, 1e-8)
    return scale, int(np.clip(round(-low / scale), 0, 255))


def symmetric_weights(weights: np.ndarray, axis_size: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 weights (at most WEIGHT_LEVELS in magnitude) and one scale per slice along the first axis."""
    largest = np.maximum(np.abs(weights.reshape(axis_size, -1)).max(axis=1), 1e-8)
    scales = (largest / WEIGHT_LEVELS).astype(np.float32)
    shape = [axis_size] + [1] * (weights.ndim - 1)
    quantised = np.clip(np.round(weights / scales.reshape(shape)), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
    return quantised, scales


def quantise(model: onnx.ModelProto, ranges: dict[str, tuple[float, float]]) -> onnx.ModelProto:
    """The model with its convolutions in QDQ form (see the docstring)."""
    result = onnx.ModelProto()
    result.CopyFrom(model)
    graph = result.graph
    initializers = {init.name: init for init in graph.initializer}
    added: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    dequantised: dict[str, str] = {}
    replaced: set[str] = set()  # ReLUs folded into the convolution before them, by output
    unused: set[str] = set()

    def qdq(tensor: str, low: float, high: float, into: str | None = None) -> str:
        """Quantise and dequantise `tensor` (as `into` when given); the name of the dequantised tensor."""
        if tensor in dequantised:
            return dequantised[tensor]
        scale, zero = activation_quantisation(low, high)
        added.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{tensor}.scale"),
                      numpy_helper.from_array(np.array(zero, np.uint8), f"{tensor}.zero")])
        nodes.append(helper.make_node("QuantizeLinear", [tensor, f"{tensor}.scale", f"{tensor}.zero"], [f"{tensor}.q"]))
        out = into or f"{tensor}.dq"
        nodes.append(helper.make_node("DequantizeLinear", [f"{tensor}.q", f"{tensor}.scale", f"{tensor}.zero"], [out]))
        dequantised[tensor] = out
        return out

    # nodes by their first output: protobuf gives a new Python object at every access, so no id()
    convolutions = {node.output[0] for node in quantisable_convolutions(graph)}
    for node in graph.node:
        if node.output[0] in replaced:
            continue
        if node.output[0] in convolutions:
            name = node.output[0]
            weights = numpy_helper.to_array(initializers[node.input[1]]).astype(np.float32)
            channels = weights.shape[0]
            q_weights, w_scales = symmetric_weights(weights, channels)
            x = qdq(node.input[0], *ranges[node.input[0]])
            added.extend([numpy_helper.from_array(q_weights, f"{name}.w.q"), numpy_helper.from_array(w_scales, f"{name}.w.scale"),
                          numpy_helper.from_array(np.zeros(channels, np.int8), f"{name}.w.zero")])
            nodes.append(helper.make_node("DequantizeLinear", [f"{name}.w.q", f"{name}.w.scale", f"{name}.w.zero"], [f"{name}.w"], axis=0))
            inputs = [x, f"{name}.w"]
            unused.add(node.input[1])
            if len(node.input) > 2 and node.input[2]:
                # the bias in int32 at the scale of input x weight, as QLinearConv takes it
                x_scale, _ = activation_quantisation(*ranges[node.input[0]])
                b_scales = (w_scales * np.float32(x_scale)).astype(np.float32)
                bias = numpy_helper.to_array(initializers[node.input[2]]).astype(np.float32)
                added.extend([numpy_helper.from_array(np.round(bias / b_scales).astype(np.int32), f"{name}.b.q"),
                              numpy_helper.from_array(b_scales, f"{name}.b.scale"),
                              numpy_helper.from_array(np.zeros(channels, np.int32), f"{name}.b.zero")])
                nodes.append(helper.make_node("DequantizeLinear", [f"{name}.b.q", f"{name}.b.scale", f"{name}.b.zero"], [f"{name}.b"], axis=0))
                inputs.append(f"{name}.b")
                unused.add(node.input[2])
            convolution = helper.make_node("Conv", inputs, [f"{name}.raw"], name=node.name)
            convolution.attribute.extend(node.attribute)
            nodes.append(convolution)
            relu = sole_relu(graph, name)
            if relu is not None:
                nodes.append(helper.make_node("Relu", [f"{name}.raw"], [f"{relu.output[0]}.raw"], name=relu.name))
                qdq(f"{relu.output[0]}.raw", 0.0, ranges[name][1], into=relu.output[0])
                replaced.add(relu.output[0])
            else:
                qdq(f"{name}.raw", *ranges[name], into=name)
        else:
            nodes.append(node)

    del graph.node[:]
    graph.node.extend(nodes)
    still_used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name not in unused or init.name in still_used]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    return result


def quantised_ranges(model: onnx.ModelProto) -> dict[str, tuple[float, float]]:
    """The activation ranges a model quantised here was calibrated to, read back from its QuantizeLinear scales and
    zero points and named as in the float model (a convolution's output, also where a ReLU was folded after it)."""
    graph = model.graph
    initializers = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}
    ranges: dict[str, tuple[float, float]] = {}
    for node in graph.node:
        if node.op_type != "QuantizeLinear":
            continue
        scale, zero = float(initializers[node.input[1]]), int(initializers[node.input[2]])
        name = node.input[0]
        if name.endswith(".raw"):
            producer = producers.get(name)
            # "{conv}.raw" is a convolution's output; "{relu}.raw" a ReLU's whose input is "{conv}.raw"
            source = producer.input[0] if producer is not None and producer.op_type == "Relu" else name
            name = source.removesuffix(".raw")
        ranges[name] = (-zero * scale, (255 - zero) * scale)
    return ranges


def widened(ranges: dict[str, tuple[float, float]], floor: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """Each range widened to cover the same tensor's range in `floor` too."""
    return {name: (min(low, floor[name][0]), max(high, floor[name][1])) if name in floor else (low, high) for name, (low, high) in ranges.items()}


def write_quantised(model: onnx.ModelProto, path: Path, calibration_inputs: list[np.ndarray],
                    floor: dict[str, tuple[float, float]] | None = None) -> None:
    """The model quantised at the activation ranges seen on the calibration inputs (widened to `floor`'s where given),
    checked by onnx and written to `path`."""
    ranges = calibration_ranges(probe_model(model), calibration_inputs)
    quantised = quantise(model, widened(ranges, floor or {}))
    onnx.checker.check_model(quantised)
    onnx.save(quantised, str(path))


def check_record(float_rate: ErrorRate, quantised_rate: ErrorRate, alike: int, total: int) -> dict:
    """reading_check's figures as a manifest keeps them."""
    return {"lines": total, "greedyCer": {"float32": round(float_rate.cer, 5), "int8": round(quantised_rate.cer, 5)},
            "greedyWer": {"float32": round(float_rate.wer, 5), "int8": round(quantised_rate.wer, 5)}, "readAlike": alike}


def line_batches(lines, store: ImageStore, height: int, mean: float, std: float, size: int):
    """Evaluation batches (no augmentation) of lines of similar width: (images N x 1 x H x W, content widths, texts)."""
    ordered = sorted(lines, key=lambda line: line.width)
    for start in range(0, len(ordered), size):
        batch = make_batch(ordered[start:start + size], store, {}, height, mean, std, None)
        yield batch.images.numpy(), batch.widths, batch.texts


def calibration_ranges(probe: onnx.ModelProto, batches: list[np.ndarray]) -> dict[str, tuple[float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(probe, f"{tmp}/probe.onnx")
        cases = []
        for i, images in enumerate(batches):
            np.asarray(images, dtype="<f4").tofile(f"{tmp}/in{i}.bin")
            cases.append({"input": f"{tmp}/in{i}.bin", "dims": list(images.shape)})
        Path(tmp, "cases.json").write_text(json.dumps(cases))
        subprocess.run([str(NODE), str(Path(__file__).with_name("onnx-ranges.mjs")), f"{tmp}/probe.onnx", f"{tmp}/cases.json", f"{tmp}/ranges.json"],
                       check=True, cwd=REPO)
        return {name: (low, high) for name, (low, high) in json.loads(Path(tmp, "ranges.json").read_text()).items()}


def greedy_texts(output: np.ndarray, images: np.ndarray, widths: list[int], charset: list[str]) -> list[str]:
    """Greedy CTC reading of each line of a batch, over the frames its content covers."""
    log_probs = torch.from_numpy(output.reshape(images.shape[0], -1, len(charset) + 1))
    frames = log_probs.shape[1]
    return greedy_decode(log_probs, [min(frames, -(-frames * width // images.shape[-1])) for width in widths], charset)


def reading_check(float_path: Path, quantised_path: Path, batches, charset: list[str]) -> tuple[ErrorRate, ErrorRate, int, int]:
    """Greedy error rates of both models on the lines, how many lines they read alike, and how many lines."""
    inputs = [images for images, _, _ in batches]
    float_outputs = onnxruntime_node_outputs(float_path, inputs)
    quantised_outputs = onnxruntime_node_outputs(quantised_path, inputs)
    float_rate, quantised_rate, alike, total = ErrorRate(), ErrorRate(), 0, 0
    for (images, widths, texts), f_out, q_out in zip(batches, float_outputs, quantised_outputs):
        for reference, f_text, q_text in zip(texts, greedy_texts(f_out, images, widths, charset), greedy_texts(q_out, images, widths, charset)):
            float_rate.add(f_text, reference)
            quantised_rate.add(q_text, reference)
            alike += f_text == q_text
            total += 1
    return float_rate, quantised_rate, alike, total


def manifest_text(manifest: dict) -> str:
    """JSON as the manifests are written (lists of numbers on one line), so that the diff shows only what changed."""
    text = json.dumps(manifest, indent=2, ensure_ascii=False)
    number = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    return re.sub(rf"\[\s*({number}(?:,\s*{number})*)\s*\]", lambda m: "[" + ", ".join(re.split(r",\s*", m.group(1))) + "]", text) + "\n"


def evenly(items: list, count: int) -> list:
    if count >= len(items):
        return list(items)
    return [items[round(i * (len(items) - 1) / max(1, count - 1))] for i in range(count)]


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="a model directory written by train/ (manifest.json, rec.onnx, charset.txt)")
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"), help="where the dataset's tars are unpacked")
    p.add_argument("--calibration-lines", type=int, default=512, help="training lines, spread evenly over the split")
    p.add_argument("--check-lines", type=int, default=600, help="validation lines, spread evenly over the split")
    p.add_argument("--max-cer-rise", type=float, default=0.5, help="greedy CER points the quantised model may lose on the check lines")
    args = p.parse_args(argv)

    manifest_path = args.model / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    recognition = manifest["recognition"]
    float_path = args.model / float_file(recognition)
    charset = read_charset(args.model / recognition["charset"])
    height, mean, std = int(recognition["inputHeight"]), float(recognition["mean"][0]), float(recognition["std"][0])

    images_dir, _ = ensure_extracted(args.dataset, args.cache)
    calibration = evenly(read_split(args.dataset, "train", images_dir), args.calibration_lines)
    check = evenly(read_split(args.dataset, "val", images_dir), args.check_lines)
    store = ImageStore(images_dir, calibration + check)

    quantised_path = args.model / QUANTISED_FILE
    write_quantised(onnx.load(str(float_path)), quantised_path, [images for images, _, _ in line_batches(calibration, store, height, mean, std, 16)])

    float_rate, quantised_rate, alike, total = reading_check(float_path, quantised_path, list(line_batches(check, store, height, mean, std, 16)), charset)
    rise = 100 * (quantised_rate.cer - float_rate.cer)
    print(f"{total} validation lines, greedy CER {100 * float_rate.cer:.2f} % (float32) -> {100 * quantised_rate.cer:.2f} % (int8), "
          f"WER {100 * float_rate.wer:.2f} -> {100 * quantised_rate.wer:.2f} %; read alike: {alike}")
    if rise > args.max_cer_rise:
        quantised_path.unlink()
        raise SystemExit(f"the quantised model reads {rise:.2f} CER points worse than float32 (allowed {args.max_cer_rise}): not written")

    from_file, from_version = float_file(recognition), float_version(manifest)
    manifest["version"] = f"{from_version}-int8"
    recognition["file"] = QUANTISED_FILE
    recognition["float32File"] = from_file
    manifest["quantization"] = {
        "tool": "train/quantize_int8.py",
        "from": from_file,
        "fromVersion": from_version,
        "convolutions": "QDQ (QLinearConv), uint8 activations calibrated on min/max, int8 weights per output channel, 7 bits",
        "lstm": "float32 (onnxruntime's DynamicQuantizeLSTM would make a line's reading depend on the lines batched with it)",
        "calibrationLines": len(calibration),
        "check": check_record(float_rate, quantised_rate, alike, total),
    }
    manifest_path.write_text(manifest_text(manifest), encoding="utf-8")
    print(f"wrote {quantised_path} ({quantised_path.stat().st_size / 1e6:.1f} MB) and pointed {manifest_path} at it")


if __name__ == "__main__":
    main(sys.argv[1:])
