"""Fine-tune a shipped recognizer on one customer's ground-truth lines, on a CPU, within a time budget.

    python3 train/finetune.py --base models/hwr-htr-v3 --lines DIR/lines.jsonl --run RUN --out MODEL_DIR \\
        [--max-minutes 15] [--threads 2] [--resume]

The lines are the ones train/cut_lines.ts writes (the service's own crops, exactly what the recognizer
reads: lines.jsonl, one {"id", "image", "text", "page"[, "split"]} a line, images relative to its folder).
The base's PyTorch weights are rebuilt from its rec.onnx (checkpoint_from_onnx.py's reading of the graph,
proved against rec.onnx in onnxruntime-node) and cached by the file's digest (--base-cache).

- Validation: the lines marked "split": "val" where the file marks them; else whole pages where there
  are 3 pages or more (a fifth of them, spread over the document), else a fifth of the lines.
- Charset: characters of the training lines that the base lacks get new output rows (kraken's
  `ketos train --resize union`): the old rows are kept as they are, the new ones start at zero weights and
  the lowest old bias, so the grown model reads as the base until it learns them. The exported model's
  language model gets them too (adapted_language_model below).
- Training: AdamW, a short warm-up then a cosine to the planned end; the planned epochs follow from the
  number of training lines (--line-passes) and, after the first epoch, from the time budget; early
  stop after --patience epochs without a better validation CER; the best checkpoint by validation CER
  (greedy decoding) is the one exported. Batch norms keep the base's statistics (eval mode).
- Checkpoints: RUN/last.pt every --checkpoint-minutes, at SIGTERM and at the end; RUN/best.pt at each new
  best. --resume continues from RUN/last.pt (from the start when there is none) with the settings stored
  in it; a run killed and resumed makes the same batches, augmentation and dropout, so it ends the same
  way.
- Progress: JSON lines on stdout, nothing else there (logs go to stderr):
    {"event": "started", ...}  {"event": "epoch", "epoch": n, "train_loss": x, "val_cer": y, "seconds": s, ...}
    {"event": "checkpoint", ...}  {"event": "finished", "best_val_cer": ..., "minutes": ..., "model": DIR, ...}
    {"event": "interrupted", ...} (SIGTERM: checkpointed, exit 143)   {"event": "failed", "code": ..., "message": ...} (exit 1)
- Export: the best checkpoint as a model directory (export_onnx.py's export and its check in
  onnxruntime-node, on the run's own validation lines): rec.onnx, charset.txt, the base's manifest with
  this charset and a training record, the base's decoding and language-model settings and files.
- 8 bits, with --quantize: its convolutions are also written quantised (rec.int8.onnx, quantize_int8.py's form; the
  activation ranges those of the hand's lines widened to the base's), and the manifest runs that file, unless its
  greedy readings of the hand's lines lose more than --max-cer-rise CER points against float32 (then float32 runs).
  rec.onnx stays: fine-tuning again starts from it. Off by default: on five hands it cost a tenth of the fine-tune's
  gain (docs/models.md, "A trained model in 8 bits").

docs/training.md, "Fine-tuning on a customer's hand", has the measurements behind the defaults.
"""

from __future__ import annotations

import os

# The BLAS under PyTorch's matrix products: one thread, PyTorch's own threads (--threads) share the work
# (two OpenBLAS threads under two PyTorch threads made a step 2.7 times slower here). Set before numpy
# or torch load it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from PIL import Image  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from augment import augment_scaled, augment_source, random_width_scale  # noqa: E402
from checkpoint_from_onnx import config_from_graph, load_weights, read_graph  # noqa: E402
from data import read_charset, save_json, width_batches, write_charset  # noqa: E402
from export_onnx import check_with_onnxruntime, export  # noqa: E402
from metrics import ErrorRate, greedy_decode, levenshtein  # noqa: E402
from model import CRNN, ModelConfig, count_parameters  # noqa: E402
from quantize_int8 import QUANTISED_FILE, check_record, float_file, float_version, quantised_ranges, reading_check, write_quantised  # noqa: E402

EXIT_INTERRUPTED = 143  # 128 + SIGTERM, as a shell reports a process ended by it
FREEZE_CHOICES = ("none", "encoder", "encoder+temporal", "recurrent")


class Failure(Exception):
    """A refusal with a stable code, reported as {"event": "failed"} and exit 1."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


PROGRESS = sys.stdout  # main() makes it the process's real stdout and sends everything else written there to stderr


def emit(event: str, **fields) -> None:
    """One progress line on stdout (the trainer role reads these)."""
    PROGRESS.write(json.dumps({"event": event, **fields}, ensure_ascii=False) + "\n")
    PROGRESS.flush()


def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", type=Path, help="the model directory to start from (manifest.json, rec.onnx, charset.txt), e.g. models/hwr-htr-v3")
    p.add_argument("--lines", type=Path, help="lines.jsonl from train/cut_lines.ts")
    p.add_argument("--run", type=Path, required=True, help="run directory: last.pt, best.pt, progress.jsonl")
    p.add_argument("--out", type=Path, help="the model directory to write (default RUN/model)")
    p.add_argument("--resume", action="store_true", help="continue from RUN/last.pt where there is one (its settings; only the stopping rules and threads from here)")
    p.add_argument("--max-minutes", type=float, default=15.0, help="training time budget (minutes, all runs of a resumed training together); the best checkpoint so far is exported")
    p.add_argument("--checkpoint-minutes", type=float, default=2.0, help="write RUN/last.pt at least this often (0: after every step)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--lr", type=float, default=3e-4, help="peak learning rate")
    p.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW's decay toward zero (without --anchor)")
    p.add_argument("--anchor", type=float, default=0.0,
                   help="decay toward the base's weights instead (L2-SP, decoupled): each step moves every trainable weight lr x ANCHOR of its distance back to the base's")
    p.add_argument("--line-passes", type=float, default=3000, help="planned training: about this many lines seen (epochs = passes / training lines, within --min-epochs and --max-epochs)")
    p.add_argument("--min-epochs", type=int, default=8)
    p.add_argument("--max-epochs", type=int, default=60)
    p.add_argument("--patience", type=int, default=8, help="stop after this many epochs without a better validation CER (0: never)")
    p.add_argument("--batch-lines", type=int, default=8, help="most lines a batch")
    p.add_argument("--batch-columns", type=int, default=9600, help="most padded columns (at model height) a batch, lines x width")
    p.add_argument("--augment", type=float, default=0.5, help="the chance that a training line is augmented (train/augment.py's distortions, at twice the model height)")
    p.add_argument("--freeze", choices=FREEZE_CHOICES, default="encoder", help="layers kept as the base has them")
    p.add_argument("--val-share", type=float, default=0.2, help="share of pages (3 pages or more) or lines held out for validation when the file marks none")
    p.add_argument("--base-cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hwr" / "finetune-base",
                   help="where base checkpoints rebuilt from rec.onnx are kept, by the file's digest")
    p.add_argument("--name", help="manifest name of the model written (default: the base's)")
    p.add_argument("--version", help="manifest version of the model written (default: BASE_VERSION-ft)")
    p.add_argument("--no-lexicon-words", dest="lexicon_words", action="store_false",
                   help="keep the base's known words as they are (by default the training lines' words join them)")
    p.add_argument("--no-check", action="store_true", help="skip the onnxruntime-node checks (rebuild and export); for tests of other parts only")
    p.add_argument("--quantize", action="store_true",
                   help="also write its convolutions in 8 bits, as the base's are, and run that file where it reads the hand's lines alike (off by default: "
                        "docs/models.md, \"A trained model in 8 bits\")")
    p.add_argument("--max-cer-rise", type=float, default=0.5,
                   help="greedy CER points the 8-bit model may lose against float32 on the hand's lines; over it, float32 is used")
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------------------------------
# lines


@dataclass(frozen=True)
class TrainLine:
    id: str
    page: str
    text: str
    split: str | None
    pixels: np.ndarray  # uint8, model height x width, grey

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])


def read_lines(path: Path, height: int) -> list[TrainLine]:
    """lines.jsonl and its images (8-bit grey at the model's height; another height is scaled to it)."""
    if not path.exists():
        raise Failure("lines_missing", f"{path} does not exist")
    lines: list[TrainLine] = []
    seen: set[str] = set()
    for number, row in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not row.strip():
            continue
        try:
            item = json.loads(row)
            line_id, image, text = str(item["id"]), str(item["image"]), str(item["text"])
        except (ValueError, KeyError, TypeError) as error:
            raise Failure("lines_invalid", f"{path}:{number}: not a line ({error})") from None
        if line_id in seen:
            raise Failure("lines_invalid", f"{path}:{number}: id {line_id!r} appears twice")
        seen.add(line_id)
        text = " ".join(unicodedata.normalize("NFC", text).split())
        if not text:
            continue
        split = item.get("split")
        if split not in (None, "train", "val"):
            raise Failure("lines_invalid", f"{path}:{number}: split must be train or val, not {split!r}")
        try:
            with Image.open(path.parent / image) as im:
                im = im.convert("L")
                if im.height != height:
                    im = im.resize((max(1, round(im.width * height / im.height)), height), Image.BILINEAR)
                pixels = np.asarray(im, dtype=np.uint8).copy()
        except OSError as error:
            raise Failure("lines_invalid", f"{path}:{number}: image {image}: {error}") from None
        lines.append(TrainLine(line_id, str(item.get("page", "")), text, split, pixels))
    return lines


def natural_key(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in __import__("re").split(r"(\d+)", text)]


def spread(count: int, chosen: int) -> list[int]:
    """`chosen` of `count` positions spread evenly, the last one always among them."""
    return sorted({count - 1 - round(i * count / chosen) for i in range(chosen)})


def split_lines(lines: list[TrainLine], share: float) -> tuple[list[TrainLine], list[TrainLine], str]:
    """(train, validation, how): the file's split, else by page (3 pages or more), else by line."""
    if any(line.split for line in lines):
        train = [line for line in lines if line.split != "val"]
        val = [line for line in lines if line.split == "val"]
        return train, val, "given"
    pages = sorted({line.page for line in lines}, key=natural_key)
    if len(pages) >= 3:
        held = {pages[i] for i in spread(len(pages), max(1, round(share * len(pages))))}
        return [line for line in lines if line.page not in held], [line for line in lines if line.page in held], "page"
    held_lines = set(spread(len(lines), max(1, round(share * len(lines)))))
    return [line for i, line in enumerate(lines) if i not in held_lines], [line for i, line in enumerate(lines) if i in held_lines], "line"


def grown_charset(base: list[str], train: list[TrainLine]) -> list[str]:
    """The base's characters, then those of the training lines it lacks, most frequent first (then by code point)."""
    known = set(base)
    counts = Counter(ch for line in train for ch in line.text if ch not in known)
    return base + sorted(counts, key=lambda ch: (-counts[ch], ord(ch)))


def lines_digest(lines: list[TrainLine]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(f"{line.id}\0{line.page}\0{line.text}\0{line.split}\0{line.pixels.shape}\0".encode())
        digest.update(line.pixels.tobytes())
    return "sha256:" + digest.hexdigest()


# ---------------------------------------------------------------------------------------------------------------------
# the base model


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(base: Path) -> dict:
    try:
        manifest = json.loads((base / "manifest.json").read_text(encoding="utf-8"))
        recognition = manifest["recognition"]
        recognition["file"], recognition["charset"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise Failure("base_invalid", f"{base}: not a model directory with a recognizer ({error})") from None
    if "model" in recognition:
        raise Failure("base_invalid", f"{base}: its recognizer is borrowed from {recognition['model']}: give that directory as --base")
    if recognition.get("channels", 3) != 1 or recognition.get("blankIndex", 0) != 0 or recognition.get("output") != "logits":
        raise Failure("base_invalid", f"{base}: not a recognizer trained by train/ (grey input, blank first, logits out)")
    return manifest


def rebuild_base(base: Path, manifest: dict, cache: Path) -> tuple[CRNN, dict]:
    """The base as a PyTorch model (eval-mode function identical to rec.onnx), rebuilt once per rec.onnx and cached."""
    recognition = manifest["recognition"]
    onnx_path = base / float_file(recognition)
    digest = file_digest(onnx_path)
    cached = cache / f"base-{digest[:20]}.pt"
    charset = read_charset(base / recognition["charset"])
    if cached.exists():
        state = torch.load(cached, map_location="cpu")
        cfg = ModelConfig.from_dict(state["model_config"])
        model = CRNN(cfg)
        model.load_state_dict(state["model"])
        return model.eval(), {"charset": charset, "onnx_sha256": digest, "cached": True}
    try:
        convs, lstms, classifier, width_stride = read_graph(onnx_path)
        cfg = config_from_graph(convs, lstms, classifier, width_stride, int(recognition["inputHeight"]))
    except (SystemExit, KeyError, ValueError, OSError) as error:
        raise Failure("base_invalid", f"{onnx_path}: {error}") from None
    if cfg.num_classes != len(charset) + 1:
        raise Failure("base_invalid", f"{onnx_path}: {cfg.num_classes} classes, {len(charset)} characters + blank in the charset")
    model = CRNN(cfg)
    # each folded batch norm becomes the identity plus the folded bias: the same function in eval mode, which is how
    # the fine-tuner keeps them (checkpoint_from_onnx.py re-derives statistics only for train-mode batch norms)
    load_weights(model, convs, lstms, classifier)
    return model.eval(), {"charset": charset, "onnx_sha256": digest, "cached": False, "cache_file": cached}


def save_base(model: CRNN, info: dict) -> None:
    cache_file: Path = info["cache_file"]
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache_file.with_suffix(f".tmp{os.getpid()}")
    torch.save({"model": model.state_dict(), "model_config": model.cfg.to_dict(), "onnx_sha256": info["onnx_sha256"]}, tmp)
    os.replace(tmp, cache_file)


# a new class's bias: this far under the lowest old one (the shipped v3 then gives a new class at most 2e-4 of a frame on
# real lines, against 1e-2 at the lowest old bias); CTC still pulls it up hard where the transcription has it
NEW_CLASS_BIAS_BELOW = 4.0


def grow_classifier(model: CRNN, classes: int) -> CRNN:
    """The same model with `classes` output classes: the old rows as they are; the new ones with zero weights and a
    bias under the lowest old one, so that the grown model reads as the base until it learns them."""
    old = model.classifier
    if classes == old.out_channels:
        return model
    grown = CRNN(ModelConfig.from_dict({**model.cfg.to_dict(), "num_classes": classes}))
    state = model.state_dict()
    with torch.no_grad():
        weight = torch.zeros(classes, *old.weight.shape[1:])
        weight[: old.out_channels] = old.weight
        bias = torch.full((classes,), float(old.bias.min()) - NEW_CLASS_BIAS_BELOW)
        bias[: old.out_channels] = old.bias
    state["classifier.weight"], state["classifier.bias"] = weight, bias
    grown.load_state_dict(state)
    return grown.eval()


def freeze(model: CRNN, which: str) -> None:
    for p in model.parameters():
        p.requires_grad_(True)
    frozen: list[nn.Module] = []
    if which in ("encoder", "encoder+temporal"):
        frozen.append(model.encoder)
    if which == "encoder+temporal":
        frozen += [model.project, model.temporal]
    if which == "recurrent" and model.recurrent is not None:
        frozen.append(model.recurrent)  # the BiLSTM head; the classifier learns (new characters need it)
    for module in frozen:
        for p in module.parameters():
            p.requires_grad_(False)


def training_mode(model: CRNN) -> None:
    """Dropout on; batch norms on the base's statistics (a batch of one hand's lines would move them)."""
    model.train()
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            module.eval()


# ---------------------------------------------------------------------------------------------------------------------
# batches


@dataclass
class Batch:
    images: torch.Tensor  # N, 1, H, W normalised
    frames: torch.Tensor  # CTC input lengths: the frames that cover each line (as the service decodes them)
    targets: torch.Tensor
    target_lengths: torch.Tensor
    texts: list[str]


@dataclass(frozen=True)
class Shape:
    height: int
    stride: int
    mean: float
    std: float
    trailing: int  # columns of white after every line (the manifest's trailingPadding)
    multiple: int  # the padded width's multiple


def frames_covering(width: int, stride: int, steps: int) -> int:
    """As the service decodes a line (text-recognizer.ts framesCovering): the frames over it, one more than its last column's."""
    return min(steps, math.ceil(width / stride) + 1)


def ctc_fits(text: list[int], frames: int) -> bool:
    """CTC needs a frame per label and a blank between repeated ones."""
    repeats = sum(1 for a, b in zip(text, text[1:]) if a == b)
    return len(text) + repeats <= frames


def make_batch(lines: list[TrainLine], index: dict[str, int], shape: Shape, generator: torch.Generator | None, augment: float) -> Batch:
    """Lines as the service feeds them (crop, white columns after it, white to the batch's width); in training, each
    line augmented with chance `augment`: scaled to twice the height, distorted as train.py's lines are (augment.py,
    whose sizes are those of its 64 px lines), scaled back by area, then its contrast, paper and noise."""
    images: list[torch.Tensor] = []
    for line in lines:
        img = torch.from_numpy(line.pixels.astype(np.float32) / 255.0)[None, None]
        if generator is not None and float(torch.rand(1, generator=generator)) < augment:
            big = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False)
            factor = random_width_scale(generator)
            big = F.interpolate(big, size=(2 * shape.height, max(8, round(big.shape[-1] * factor))), mode="bilinear", align_corners=False, antialias=factor < 1)
            big = augment_source(big, generator)
            img = F.interpolate(big, size=(shape.height, max(4, round(big.shape[-1] / 2))), mode="area")
            img = augment_scaled(img, generator)
        images.append(img)
    content = [img.shape[-1] for img in images]
    width = max(content) + shape.trailing
    width = -(-width // shape.multiple) * shape.multiple
    batch = torch.ones(len(images), 1, shape.height, width)
    for i, img in enumerate(images):
        batch[i, :, :, : img.shape[-1]] = img[0]
    batch = (batch - shape.mean) / shape.std
    steps = width // shape.stride
    frames = torch.tensor([frames_covering(w, shape.stride, steps) for w in content], dtype=torch.long)
    encoded = [[index[ch] for ch in line.text if ch in index] for line in lines]
    return Batch(
        batch,
        frames,
        torch.tensor([k for e in encoded for k in e], dtype=torch.long),
        torch.tensor([len(e) for e in encoded], dtype=torch.long),
        [line.text for line in lines],
    )


def plan_batches(lines: list[TrainLine], max_lines: int, max_columns: int, seed: int) -> list[list[int]]:
    """Indices grouped by similar width, each batch at most `max_lines` lines and `max_columns` padded columns; the
    order random but fixed by the seed (a resumed run makes the same batches): data.py's batching, in buckets of 48
    columns of width as finetune.py has always made them."""
    return width_batches(lines, max_columns, max_lines, seed, bucket=48)


def batch_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed((seed * 1_000_003 + epoch) * 100_003 + index)
    return g


@torch.no_grad()
def evaluate(model: CRNN, lines: list[TrainLine], index: dict[str, int], charset: list[str], shape: Shape, stop=None) -> tuple[float, float, list[str]] | None:
    """Greedy CER, WER and readings of the lines (model in eval mode); None when `stop()` says so between batches."""
    model.eval()
    rate = ErrorRate()
    readings: dict[int, str] = {}
    for ids in plan_batches(lines, 16, 16 * 1600, seed=0):
        if stop and stop():
            return None
        batch = make_batch([lines[i] for i in ids], index, shape, None, 0.0)
        hypotheses = greedy_decode(model(batch.images), batch.frames.tolist(), charset)
        for i, hypothesis in zip(ids, hypotheses):
            readings[i] = hypothesis
            rate.add(hypothesis, lines[i].text)
    return rate.cer, rate.wer, [readings[i] for i in range(len(lines))]


def learning_rate(peak: float, step: int, warmup: int, total: int) -> float:
    """Linear warm-up from 5 % of the peak, then a cosine to 2 % of it at `total` steps."""
    if step < warmup:
        return peak * (0.05 + 0.95 * step / warmup)
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))


# ---------------------------------------------------------------------------------------------------------------------
# the language model


def aligned_substitutes(readings: list[str], references: list[str], wanted: set[str]) -> dict[str, Counter]:
    """For each wanted character of the references, the characters the readings have where an alignment (Levenshtein,
    one optimal path) substitutes them."""
    found: dict[str, Counter] = {ch: Counter() for ch in wanted}
    for hyp, ref in zip(readings, references):
        if not wanted & set(ref):
            continue
        rows, cols = len(ref) + 1, len(hyp) + 1
        d = [[0] * cols for _ in range(rows)]
        for i in range(rows):
            d[i][0] = i
        for j in range(cols):
            d[0][j] = j
        for i in range(1, rows):
            for j in range(1, cols):
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
        i, j = len(ref), len(hyp)
        while i > 0 and j > 0:
            if d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
                if ref[i - 1] in wanted and ref[i - 1] != hyp[j - 1]:
                    found[ref[i - 1]][hyp[j - 1]] += 1
                i, j = i - 1, j - 1
            elif d[i][j] == d[i - 1][j] + 1:
                i -= 1
            else:
                j -= 1
    return found


def twin_characters(added: list[str], readings: list[str], references: list[str], symbols: set[str]) -> dict[str, str | None]:
    """For each added character, the character of the language model the base model read in its place (the most
    frequent substitute, where it is at least a third of the character's occurrences and twice or more): ’ for ', ſ for
    s. None where the base read nothing steady there."""
    occurrences = Counter(ch for ref in references for ch in ref if ch in set(added))
    substitutes = aligned_substitutes(readings, references, set(added))
    twins: dict[str, str | None] = {}
    for ch in added:
        best = [(k, n) for k, n in substitutes[ch].most_common() if k in symbols]
        twins[ch] = best[0][0] if best and best[0][1] >= 2 and best[0][1] >= occurrences[ch] / 3 else None
    return twins


def adapted_language_model(document: dict, twins: dict[str, str | None], texts: list[str]) -> dict:
    """The LM document with the added characters in it. Without them it scores a character it never saw at its
    `unknown` probability plus every backoff weight of the context: about -15 to -18 (natural log) for ’ in French
    text, where ' gets -1.4, which no beam search lets through. An added character with a twin is scored as its twin
    is, in every context the file stores, times the share it has of the two in the training lines; one without a
    twin gets a unigram at its frequency in the training lines."""
    chars = Counter(ch for text in texts for ch in text)
    total = max(1, sum(chars.values()))
    for model in document["models"].values():
        ngrams = model["ngrams"]
        additions: dict[str, float] = {}
        for ch, twin in twins.items():
            if twin is None or twin == ch:
                additions[ch] = round(math.log(max(chars[ch], 1) / total), 3)
                continue
            share = chars[ch] / max(1, chars[ch] + chars[twin])
            shift = math.log(min(1.0, max(0.05, share)))
            for gram, value in ngrams.items():
                if gram[-1] == twin:
                    additions[gram[:-1] + ch] = round(value + shift, 3)
        for gram, value in additions.items():
            ngrams.setdefault(gram, value)
    document["source"] = f"{document.get('source', '')}; characters added by train/finetune.py: " + ", ".join(
        f"{ch} as {twin}" if twin else f"{ch} (unigram)" for ch, twin in twins.items()
    )
    return document


# ---------------------------------------------------------------------------------------------------------------------
# the run


class Stop:
    """SIGTERM sets it; the loop checks it between steps."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def install(self) -> None:
        def handler(_signum, _frame):
            self.requested = True

        signal.signal(signal.SIGTERM, handler)


def save(path: Path, state: dict) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def peak_rss_mb() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"peak_rss_mb": round(own, 1), "peak_rss_children_mb": round(children, 1)}


def blas_in_use() -> str:
    """Which BLAS the process mapped (Debian's python3-torch uses the system's libblas.so.3: the reference one unless
    OpenBLAS is installed, about 15 times slower at the LSTM's products)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    for name in ("openblas", "mkl", "blis", "atlas"):
        if name in maps.lower():
            return name
    return "reference" if "libblas.so" in maps else "bundled"


STORED_ARGS = ("base", "lines", "out", "seed", "lr", "weight_decay", "anchor", "line_passes", "min_epochs", "max_epochs", "patience",
               "batch_lines", "batch_columns", "augment", "freeze", "val_share", "base_cache", "name", "version", "no_check", "lexicon_words")


def run(args: argparse.Namespace, stop: Stop) -> int:
    started_at = time.time()
    args.run.mkdir(parents=True, exist_ok=True)
    last_path, best_path = args.run / "last.pt", args.run / "best.pt"
    state = None
    if args.resume and last_path.exists():
        state = torch.load(last_path, map_location="cpu")
        for key, value in state["args"].items():
            setattr(args, key, Path(value) if key in ("base", "lines", "out", "base_cache") and value is not None else value)
    if args.base is None or args.lines is None:
        raise Failure("usage", "--base and --lines are needed (or --resume with RUN/last.pt)")
    if args.out is None:
        args.out = args.run / "model"
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only once a process, before any parallel work (a second run in the same process)
        pass
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    manifest = read_manifest(args.base)
    recognition = manifest["recognition"]
    base_model, base_info = rebuild_base(args.base, manifest, args.base_cache)
    cfg = base_model.cfg
    lines = read_lines(args.lines, cfg.height)
    digest = lines_digest(lines)
    if state is not None and state["lines_digest"] != digest:
        raise Failure("lines_changed", f"{args.lines} is not the file the checkpoint was trained on")
    if len(lines) < 4:
        raise Failure("too_few_lines", f"{len(lines)} lines with text: at least 4 are needed (some to train on, some to validate)")
    train, val, how = split_lines(lines, args.val_share)
    if not train or not val:
        raise Failure("too_few_lines", f"the split gives {len(train)} training and {len(val)} validation lines")
    base_charset = base_info["charset"]
    charset = state["charset"] if state is not None else grown_charset(base_charset, train)
    added = charset[len(base_charset):]
    index = {ch: i + 1 for i, ch in enumerate(charset)}
    shape = Shape(cfg.height, cfg.width_stride, float(recognition["mean"][0]), float(recognition["std"][0]),
                  int(recognition.get("trailingPadding", 0)), max(int(recognition.get("widthMultiple", 1)), cfg.width_stride))

    # lines CTC cannot align (more characters than frames) are left out of training: they only add noise
    def fits(line: TrainLine) -> bool:
        return ctc_fits([index[ch] for ch in line.text if ch in index], frames_covering(line.width, shape.stride, 10**9))

    unaligned = [line.id for line in train if not fits(line)]
    train = [line for line in train if fits(line)]
    if not train:
        raise Failure("too_few_lines", "no training line is wide enough for its text")

    if not base_info["cached"]:
        # the rebuilt base must compute what rec.onnx computes, in the service's runtime, on these very lines
        if not args.no_check:
            base_index = {ch: i + 1 for i, ch in enumerate(base_charset)}
            check_with_onnxruntime(base_model, args.base / float_file(recognition), parity_cases(val, base_index, shape), base_charset)
        save_base(base_model, base_info)

    model = grow_classifier(base_model, len(charset) + 1)
    freeze(model, args.freeze)
    trainable = [p for p in model.parameters() if p.requires_grad]
    # the weights the run starts from (the base's, the new rows' zeros): where --anchor pulls them back to
    anchors = [p.detach().clone() for p in trainable] if args.anchor else []
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.0 if args.anchor else args.weight_decay)

    planned = max(args.min_epochs, min(args.max_epochs, math.ceil(args.line_passes / len(train))))
    steps_per_epoch = len(plan_batches(train, args.batch_lines, args.batch_columns, args.seed * 1000))
    if state is None:
        result = evaluate(model, val, index, charset, shape)
        assert result is not None
        base_cer, base_wer, _ = result
        progress = {
            "epoch": 0, "position": 0, "step": 0, "loss_sum": 0.0, "loss_count": 0, "planned_epochs": planned,
            "warmup": max(1, min(steps_per_epoch, round(0.05 * planned * steps_per_epoch))),
            "best_cer": math.inf, "best_wer": None, "best_epoch": 0, "since_best": 0, "history": [],
            "elapsed": 0.0, "base_val_cer": base_cer, "base_val_wer": base_wer,
        }
        twins = None
        torch.manual_seed(args.seed)  # dropout's draws from here on, whatever building the models drew
    else:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        progress = state["progress"]
        twins = state.get("twins")
        torch.set_rng_state(state["torch_rng"])
    emit(
        "started",
        base={"name": manifest["name"], "version": float_version(manifest), "rec_onnx_sha256": base_info["onnx_sha256"]},
        resumed=state is not None,
        epoch=progress["epoch"],
        lines_train=len(train),
        lines_validation=len(val),
        lines_left_out=len(unaligned),
        pages_train=len({line.page for line in train}),
        pages_validation=len({line.page for line in val}),
        split=how,
        charset_added=added,
        base_val_cer=round(progress["base_val_cer"], 4),
        base_val_wer=round(progress["base_val_wer"], 4),
        planned_epochs=progress["planned_epochs"],
        max_minutes=args.max_minutes,
        threads=args.threads,
        blas=blas_in_use(),
        parameters=count_parameters(model),
        trainable_parameters=sum(p.numel() for p in trainable),
    )

    def snapshot() -> dict:
        return {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "model_config": model.cfg.to_dict(),
            "charset": charset,
            "progress": progress,
            "twins": twins,
            "lines_digest": digest,
            "torch_rng": torch.get_rng_state(),
            "args": {key: str(getattr(args, key)) if isinstance(getattr(args, key), Path) else getattr(args, key) for key in STORED_ARGS},
        }

    segment_start = time.time()
    elapsed_before = progress["elapsed"]
    last_checkpoint = time.time()

    def elapsed() -> float:
        return elapsed_before + time.time() - segment_start

    def checkpoint(reason: str) -> None:
        nonlocal last_checkpoint
        progress["elapsed"] = elapsed()
        save(last_path, snapshot())
        last_checkpoint = time.time()
        emit("checkpoint", reason=reason, epoch=progress["epoch"], position=progress["position"], seconds=round(progress["elapsed"], 1))

    def interrupted() -> int:
        checkpoint("interrupted")
        emit("interrupted", epoch=progress["epoch"], position=progress["position"], seconds=round(progress["elapsed"], 1), checkpoint=str(last_path))
        return EXIT_INTERRUPTED

    stopped = progress.get("stopped")
    training_mode(model)
    while stopped is None:
        epoch = progress["epoch"]
        batches = plan_batches(train, args.batch_lines, args.batch_columns, args.seed * 1000 + epoch)
        total_steps = progress["planned_epochs"] * len(batches)
        for i in range(progress["position"], len(batches)):
            if stop():
                return interrupted()
            batch = make_batch([train[k] for k in batches[i]], index, shape, batch_generator(args.seed, epoch, i), args.augment)
            lr = learning_rate(args.lr, progress["step"], progress["warmup"], total_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            out = model(batch.images)
            loss = F.ctc_loss(out.transpose(0, 1), batch.targets, batch.frames, batch.target_lengths, blank=0, zero_infinity=True, reduction="mean")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 5.0)
            optimizer.step()
            if anchors:
                with torch.no_grad():
                    for p, p0 in zip(trainable, anchors):
                        p.sub_(p - p0, alpha=lr * args.anchor)
            progress["loss_sum"] += float(loss) * len(batch.texts)
            progress["loss_count"] += len(batch.texts)
            progress["position"], progress["step"] = i + 1, progress["step"] + 1
            if (time.time() - last_checkpoint) / 60 >= args.checkpoint_minutes:
                checkpoint("time")
            if elapsed() / 60 >= args.max_minutes:
                break
        if progress["position"] < len(batches):  # out of time within the epoch: the best so far stands
            stopped = "deadline"
            break
        result = evaluate(model, val, index, charset, shape, stop)
        training_mode(model)
        if result is None:
            return interrupted()
        cer, wer, _ = result
        lr = learning_rate(args.lr, progress["step"], progress["warmup"], total_steps)
        progress["epoch"] += 1
        epoch_loss = progress["loss_sum"] / max(1, progress["loss_count"])
        better = cer < progress["best_cer"]
        record = {"epoch": progress["epoch"], "train_loss": round(epoch_loss, 4), "val_cer": round(cer, 4), "val_wer": round(wer, 4),
                  "seconds": round(elapsed(), 1), "lr": float(f"{lr:.3g}"), "best": better}
        progress["history"].append(record)
        progress.update(position=0, loss_sum=0.0, loss_count=0)
        if better:
            progress.update(best_cer=cer, best_wer=wer, best_epoch=progress["epoch"], since_best=0)
            save(best_path, {"model": model.state_dict(), "model_config": model.cfg.to_dict(), "charset": charset, "epoch": progress["epoch"], "val_cer": cer, "val_wer": wer})
        else:
            progress["since_best"] += 1
        if progress["epoch"] == 1:
            # the plan, once an epoch's time is known: as many epochs as fit the budget, fixed from here (in the checkpoint)
            epoch_seconds = elapsed()
            fit = int(args.max_minutes * 60 / max(epoch_seconds, 1e-3))
            progress["planned_epochs"] = max(1, min(progress["planned_epochs"], fit))
            record["planned_epochs"] = progress["planned_epochs"]
        emit("epoch", **record)
        if progress["epoch"] >= progress["planned_epochs"]:
            stopped = "planned"
        elif args.patience and progress["since_best"] >= args.patience:
            stopped = "patience"
        elif elapsed() / 60 >= args.max_minutes:
            stopped = "deadline"
        if stopped is None and (time.time() - last_checkpoint) / 60 >= args.checkpoint_minutes:
            checkpoint("time")
    progress["stopped"] = stopped
    checkpoint("end")
    if not best_path.exists():
        raise Failure("no_epoch", f"the budget of {args.max_minutes} minutes ended before the first epoch did")
    if stop():
        return interrupted()

    best = torch.load(best_path, map_location="cpu")
    model = CRNN(ModelConfig.from_dict(best["model_config"]))
    model.load_state_dict(best["model"])
    model.eval()
    if added and twins is None:
        # where the base read each added character (for the language model): its greedy readings of the training lines that have one
        with_added = [line for line in train if set(line.text) & set(added)]
        base_index = {ch: i + 1 for i, ch in enumerate(base_charset)}
        result = evaluate(base_model, with_added, base_index, base_charset, shape)
        assert result is not None
        twins = {}
        lm = recognition_language_model(manifest)
        if lm is not None:
            twins = twin_characters(added, result[2], [line.text for line in with_added], lm_symbols(args.base / lm["file"]))
        save(last_path, snapshot())
    worst = export_model(model, charset, added, twins or {}, train, val, shape, manifest, args, progress, how, base_info, len(unaligned))
    minutes = progress["elapsed"] / 60
    emit(
        "finished",
        best_val_cer=round(progress["best_cer"], 4),
        best_val_wer=round(progress["best_wer"], 4),
        best_epoch=progress["best_epoch"],
        base_val_cer=round(progress["base_val_cer"], 4),
        base_val_wer=round(progress["base_val_wer"], 4),
        epochs=progress["epoch"],
        stopped=stopped,
        minutes=round(minutes, 2),
        wall_minutes=round((time.time() - started_at) / 60, 2),
        lines_train=len(train),
        lines_validation=len(val),
        charset_added=added,
        model=str(args.out),
        onnx_max_abs_difference=worst,
        **peak_rss_mb(),
    )
    return 0


def parity_cases(lines: list[TrainLine], index: dict[str, int], shape: Shape) -> list[tuple[torch.Tensor, list[int], list[str]]]:
    """A few lines one at a time (narrow to wide) and one padded batch of three, as export_onnx.py's proof takes them."""
    ordered = sorted(lines, key=lambda line: line.width)
    picks = [ordered[round(q * (len(ordered) - 1))] for q in (0.0, 0.5, 1.0)]
    cases = []
    for group in [[p] for p in picks] + [picks]:
        b = make_batch(group, index, shape, None, 0.0)
        cases.append((b.images, b.frames.tolist(), b.texts))
    return cases


def recognition_language_model(manifest: dict) -> dict | None:
    lm = manifest.get("languageModel")
    return lm if isinstance(lm, dict) and "file" in lm else None


def lm_symbols(path: Path) -> set[str]:
    """The characters an LM file knows: a packed file's header lists them (no need to unpack its tables)."""
    from char_lm import PACKED_MAGIC, read_document

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(PACKED_MAGIC):
        return set(json.loads(data[len(PACKED_MAGIC) : data.index(b"\n", len(PACKED_MAGIC))])["symbols"])
    document = read_document(path)
    return {ch for m in document["models"].values() for gram in m["ngrams"] for ch in gram}


def training_words(texts: list[str]) -> list[str]:
    """The words of the training lines as lexicon.py takes them (edge punctuation stripped, lower case, none with a
    digit): the hand's names and spellings become known words of the export's beam search, in every language."""
    from ctc_beam import word_of

    return sorted({word.lower() for text in texts for token in text.split() if (word := word_of(token))})


def export_model(model: CRNN, charset: list[str], added: list[str], twins: dict, train: list[TrainLine], val: list[TrainLine], shape: Shape,
                 manifest: dict, args: argparse.Namespace, progress: dict, how: str, base_info: dict, left_out: int) -> float | None:
    """The best checkpoint as a model directory beside the base's files; proved in onnxruntime-node on validation lines."""
    out: Path = args.out
    tmp = out.with_name(out.name + f".partial{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    export(model, tmp / "rec.onnx")
    write_charset(charset, tmp / "charset.txt")
    index = {ch: i + 1 for i, ch in enumerate(charset)}
    worst = None if args.no_check else float(f"{check_with_onnxruntime(model, tmp / 'rec.onnx', parity_cases(val, index, shape), charset):.2e}")
    written = json.loads(json.dumps(manifest))
    written["name"] = args.name or manifest["name"]
    written["version"] = args.version or f"{float_version(manifest)}-ft"
    written["recognition"].update(file="rec.onnx", charset="charset.txt")
    # the base's quantisation does not describe the fine-tuned weights: quantised again below, or float32
    written["recognition"].pop("float32File", None)
    written.pop("quantization", None)
    quantisation = None if args.no_check or not args.quantize else quantise_export(tmp, train + val, index, shape, charset, args.base, manifest, args.max_cer_rise)
    if quantisation is not None and quantisation["used"]:
        # what float_file/float_version read; the figures are in training.quantization
        written["quantization"] = {"tool": "train/finetune.py --quantize (train/quantize_int8.py's form)", "from": "rec.onnx", "fromVersion": written["version"]}
        written["version"] = f"{written['version']}-int8"
        written["recognition"].update(file=QUANTISED_FILE, float32File="rec.onnx")
    borrowed = [written.get(name) for name in ("detection", "segmentation", "orientation")] + [written.get("screening", {}).get("recognition")]
    for section in borrowed:
        # a section borrowed from another directory by a relative path keeps pointing at it
        if isinstance(section, dict) and isinstance(section.get("model"), str) and section["model"] != "builtin":
            section["model"] = str((args.base / section["model"]).resolve())
    lm = recognition_language_model(written)
    if lm is not None:
        source = args.base / lm["file"]
        if added and twins is not None:
            from char_lm import read_document, write_document

            name = "lm.bin.gz" if ".bin" in source.suffixes or source.suffix == ".gz" else "lm.json"
            write_document(tmp / name, adapted_language_model(read_document(source), twins, [line.text for line in train]))
            lm["file"] = name
            if name.startswith("lm.bin"):
                lm["format"] = "hwr-char-ngram/2"
        else:
            shutil.copyfile(source, tmp / Path(lm["file"]).name)
            lm["file"] = Path(lm["file"]).name
        if lm.get("lexicon"):
            lexicon = json.loads((args.base / lm["lexicon"]).read_text(encoding="utf-8"))
            words = training_words([line.text for line in train]) if args.lexicon_words else []
            added_words = 0
            for language, known in lexicon["languages"].items():
                before = set(known)
                lexicon["languages"][language] = sorted(before | set(words))
                added_words = max(added_words, len(lexicon["languages"][language]) - len(before))
            if words:
                lexicon["source"] = f"{lexicon.get('source', '')}; and the fine-tune's training lines' words (train/finetune.py)"
            (tmp / "lexicon.json").write_text(json.dumps(lexicon, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
            lm["lexicon"] = "lexicon.json"
            progress["lexicon_words_added"] = added_words
    written["training"] = {
        "fineTunedFrom": {"name": manifest["name"], "version": float_version(manifest), "recOnnxSha256": base_info["onnx_sha256"],
                          "training": manifest.get("training", {}).get("dataset")},
        "trainer": "train/finetune.py",
        "lines": {"train": len(train), "validation": len(val), "leftOut": left_out, "pagesTrain": len({line.page for line in train}),
                  "pagesValidation": len({line.page for line in val}), "split": how},
        "charsetAdded": added,
        "languageModelCharacters": {ch: twin for ch, twin in (twins or {}).items()},
        "knownWordsAdded": progress.get("lexicon_words_added", 0),
        "epochs": progress["epoch"],
        "bestEpoch": progress["best_epoch"],
        "stopped": progress.get("stopped"),
        "minutes": round(progress["elapsed"] / 60, 2),
        "validationCer": round(progress["best_cer"], 4),
        "validationWer": round(progress["best_wer"], 4),
        "baseValidationCer": round(progress["base_val_cer"], 4),
        "baseValidationWer": round(progress["base_val_wer"], 4),
        "validationDecoding": "greedy",
        "settings": {key: getattr(args, key) for key in ("lr", "anchor", "line_passes", "min_epochs", "max_epochs", "patience", "batch_lines", "augment", "freeze", "seed")},
        "history": progress["history"],
        **({"onnxMaxAbsDifference": worst} if worst is not None else {}),
        **({"quantization": quantisation} if quantisation is not None else {}),
    }
    save_json(tmp / "manifest.json", written)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return worst


def quantise_export(out: Path, lines: list[TrainLine], index: dict[str, int], shape: Shape, charset: list[str], base: Path, manifest: dict,
                    max_cer_rise: float) -> dict:
    """OUT/rec.onnx's convolutions in 8 bits (OUT/rec.int8.onnx), as train/quantize_int8.py writes the base's, where the
    greedy readings of the hand's lines (training and validation: the check is of the two models' agreement) lose at
    most --max-cer-rise CER points; otherwise the file is removed and float32 is used. Activation ranges: those seen on
    the hand's lines, widened to the base's own calibrated ranges where it was quantised (the encoder is frozen by
    default, so its activations are the base's, which were calibrated on 512 lines of many hands)."""
    batches = []
    for ids in plan_batches(lines, 16, 16 * 1600, seed=0):
        batch = make_batch([lines[i] for i in ids], index, shape, None, 0.0)
        batches.append((batch.images.numpy(), [lines[i].width for i in ids], batch.texts))
    base_file = base / manifest["recognition"]["file"]
    floor = quantised_ranges(onnx.load(str(base_file))) if "quantization" in manifest and base_file.exists() else {}
    write_quantised(onnx.load(str(out / "rec.onnx")), out / QUANTISED_FILE, [images for images, _, _ in batches], floor)
    float_rate, quantised_rate, alike, total = reading_check(out / "rec.onnx", out / QUANTISED_FILE, batches, charset)
    rise = 100 * (quantised_rate.cer - float_rate.cer)
    used = rise <= max_cer_rise
    log(f"finetune: 8-bit convolutions: greedy CER {100 * float_rate.cer:.2f} % (float32) -> {100 * quantised_rate.cer:.2f} % on {total} lines "
        f"({alike} read alike): {'used' if used else 'not used, float32 kept'}")
    if not used:
        (out / QUANTISED_FILE).unlink()
    return {"used": used, "calibrationLines": len(lines), "rangesFromBase": bool(floor),
            "check": {**check_record(float_rate, quantised_rate, alike, total), "maxCerRise": max_cer_rise}}


def main(argv: list[str]) -> int:
    global PROGRESS
    args = parse_args(argv)
    # stdout carries the progress lines alone: prints (the export's proof) and child processes (onnxruntime-node) write
    # to what was stdout, now stderr
    sys.stdout.flush()
    PROGRESS = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    stop = Stop()
    stop.install()
    try:
        return run(args, stop)
    except Failure as failure:
        emit("failed", code=failure.code, message=str(failure))
        log(f"finetune: {failure.code}: {failure}")
        return 1
    except SystemExit as error:  # the export's or the rebuild's proof failed
        if error.code in (0, None):
            raise
        emit("failed", code="onnx_mismatch", message=str(error.code))
        return 1
    except Exception as error:  # noqa: BLE001: whatever else went wrong is still one line for the trainer role
        import traceback

        traceback.print_exc()
        emit("failed", code="internal_error", message=f"{type(error).__name__}: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
