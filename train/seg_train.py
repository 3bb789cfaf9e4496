"""Train the line segmenter on htr-pages; checkpoints every epoch and resumes exactly.

    /usr/bin/python3 train/seg_train.py --run /work/cache/seg-train/run1 --epochs 40
    /usr/bin/python3 train/seg_train.py --run /work/cache/seg-train/run1 --resume

Every example of epoch e, step i comes from a generator seeded with (seed, e, i), so a run resumed
from an epoch's checkpoint replays the same examples. Writes RUN/log.csv (one row per epoch),
RUN/last.pt and RUN/best.pt (lowest val loss). See docs/training.md, "Line segmenter".
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

from seg_augment import make_example  # noqa: E402
from seg_data import CHANNELS, attach_bitonal, load_split  # noqa: E402
from seg_model import STRIDE, LineSegmenter, SegConfig, count_parameters  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CSV_FIELDS = ["epoch", "train_loss", "val_loss", "val_baseline_f1", "val_region_f1", "val_ends_f1", "val_bitonal_loss", "val_bitonal_baseline_f1", "lr", "epoch_seconds", "elapsed_seconds"]
# input = (pixel / 255 - MEAN) / STD; the exported manifest carries the same numbers
MEAN, STD = 0.5, 0.5
# positive weight per channel (baseline, boundary and end pixels are rare)
POS_WEIGHT = torch.tensor([4.0, 1.0, 2.0, 6.0]).view(1, len(CHANNELS), 1, 1)
ENDS = CHANNELS.index("ends")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-pages")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/seg"))
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--side", type=int, default=1024, help="longer page side fed to the network")
    p.add_argument("--crop", type=int, default=384)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--crops-per-page", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-minutes", type=float, default=None, help="stop after the epoch that passes this")
    p.add_argument("--ends-weight", type=float, default=float(POS_WEIGHT[0, ENDS]), help="positive weight of the line-end channel in the loss")
    p.add_argument("--bitonal", type=float, default=0.0, help="chance that a crop comes from a bitonal version of its page (2 per page; the val pages are also scored made bitonal)")
    p.add_argument("--init-from", type=Path, default=None, help="start from this checkpoint's weights (a head with fewer outputs: its channels are kept, the new ones start fresh)")
    return p.parse_args(argv)


def loss_of(logits: torch.Tensor, target: torch.Tensor, pos_weight: torch.Tensor = POS_WEIGHT) -> torch.Tensor:
    bce = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)
    prob = torch.sigmoid(logits)
    inter = (prob * target).sum((0, 2, 3))
    dice = 1 - (2 * inter + 1) / (prob.sum((0, 2, 3)) + target.sum((0, 2, 3)) + 1)
    return bce + 0.5 * dice.mean()


def normalise(image: torch.Tensor) -> torch.Tensor:
    return (image - MEAN) / STD


def pad_to_stride(image: torch.Tensor) -> torch.Tensor:
    h, w = image.shape[-2:]
    ph, pw = -h % STRIDE, -w % STRIDE
    return F.pad(image, (0, pw, 0, ph), value=1.0)


@torch.no_grad()
def evaluate(model, pages, bitonal: bool = False) -> tuple[float, float, float, float]:
    """Validation loss and the pixel F1 of the baseline, region and ends maps (of the pages' first bitonal versions with
    `bitonal`)."""
    model.eval()
    n = len(CHANNELS)
    losses, tp, fp, fn = [], np.zeros(n), np.zeros(n), np.zeros(n)
    for page in pages:
        image = torch.from_numpy(page.bitonal[0] if bitonal else page.image).float().div(255)[None, None]
        logits = model(normalise(pad_to_stride(image)))
        th, tw = page.target.shape[1:]
        logits = logits[:, :, :th, :tw]
        target = torch.from_numpy(page.target).float()[None]
        losses.append(loss_of(logits, target).item())
        pred = logits > 0
        t = target > 0.5
        tp += (pred & t).sum((0, 2, 3)).numpy()
        fp += (pred & ~t).sum((0, 2, 3)).numpy()
        fn += (~pred & t).sum((0, 2, 3)).numpy()
    f1 = 2 * tp / np.maximum(1, 2 * tp + fp + fn)
    model.train()
    return float(np.mean(losses)), float(f1[0]), float(f1[1]), float(f1[ENDS])


def init_from(model: LineSegmenter, checkpoint: Path) -> None:
    """Copy a checkpoint's weights; a head trained for fewer channels fills the first rows of ours."""
    weights = torch.load(checkpoint, map_location="cpu")["model"]
    own = model.state_dict()
    for key in ("head.weight", "head.bias"):
        rows = weights[key].shape[0]
        merged = own[key].clone()
        merged[:rows] = weights[key]
        weights[key] = merged
    model.load_state_dict(weights)


def learning_rate(peak: float, progress: float) -> float:
    warm = 0.03
    if progress < warm:
        return peak * progress / warm
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, (progress - warm) / (1 - warm))))


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    args.run.mkdir(parents=True, exist_ok=True)
    if args.resume:
        state = torch.load(args.run / "last.pt", map_location="cpu")
        settings = state["args"]
        for key in ("epochs", "max_minutes", "threads"):
            settings[key] = getattr(args, key)
        args = argparse.Namespace(**{**vars(args), **settings, "resume": True, "run": args.run, "dataset": args.dataset, "cache": args.cache})
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    train_pages = load_split(args.dataset, "train", args.side, args.cache)
    val_pages = load_split(args.dataset, "val", args.side, args.cache)
    bitonal = args.bitonal
    if bitonal > 0:
        attach_bitonal(train_pages, args.dataset, "train", args.side, args.cache, variants=2, seed=args.seed)
        attach_bitonal(val_pages, args.dataset, "val", args.side, args.cache, variants=0)
    cfg = SegConfig()
    model = LineSegmenter(cfg)
    if args.init_from is not None and not args.resume:
        init_from(model, args.init_from)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    pos_weight = POS_WEIGHT.clone()
    pos_weight[0, ENDS] = args.ends_weight
    epoch, best, elapsed = 0, float("inf"), 0.0
    if args.resume:
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        epoch, best, elapsed = state["epoch"], state["best"], state["elapsed"]
        torch.set_rng_state(state["torch_rng"])
    print(f"{count_parameters(model)} parameters; {len(train_pages)} train pages, {len(val_pages)} val pages; from epoch {epoch}", flush=True)
    log = args.run / "log.csv"
    if not log.exists():
        with log.open("w", newline="") as f:
            csv.writer(f).writerow(CSV_FIELDS)
    saved_args = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    started = time.time()
    steps_per_epoch = math.ceil(len(train_pages) * args.crops_per_page / args.batch)
    while epoch < args.epochs:
        t0 = time.time()
        order = np.random.default_rng(args.seed * 1000 + epoch).permutation(np.repeat(np.arange(len(train_pages)), args.crops_per_page))
        total = 0.0
        model.train()
        for step in range(steps_per_epoch):
            lr = learning_rate(args.lr, (epoch + step / steps_per_epoch) / args.epochs)
            for group in optimiser.param_groups:
                group["lr"] = lr
            images, targets = [], []
            for k, index in enumerate(order[step * args.batch : (step + 1) * args.batch]):
                g = np.random.default_rng([args.seed, epoch, step, k])
                image, target = make_example(train_pages[index], g, args.crop, bitonal_chance=bitonal)
                images.append(image)
                targets.append(target)
            logits = model(normalise(torch.stack(images)))
            loss = loss_of(logits, torch.stack(targets), pos_weight)
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimiser.step()
            total += loss.item()
        epoch += 1
        val_loss, bf1, rf1, ef1 = evaluate(model, val_pages)
        bitonal_loss, bitonal_bf1 = evaluate(model, val_pages, bitonal=True)[:2] if bitonal > 0 else ("", "")
        seconds = time.time() - t0
        elapsed += seconds
        row = [epoch, round(total / steps_per_epoch, 5), round(val_loss, 5), round(bf1, 4), round(rf1, 4), round(ef1, 4), bitonal_loss and round(bitonal_loss, 5), bitonal_bf1 and round(bitonal_bf1, 4), f"{lr:.2e}", round(seconds, 1), round(elapsed, 1)]
        with log.open("a", newline="") as f:
            csv.writer(f).writerow(row)
        print(dict(zip(CSV_FIELDS, row)), flush=True)
        state = {
            "model": model.state_dict(),
            "optimiser": optimiser.state_dict(),
            "epoch": epoch,
            "best": min(best, val_loss),
            "elapsed": elapsed,
            "torch_rng": torch.get_rng_state(),
            "args": saved_args,
            "model_config": cfg.to_dict(),
            "normalisation": {"mean": MEAN, "std": STD, "side": args.side},
        }
        if val_loss < best:
            best = val_loss
            bitonal_val = {"bitonal_loss": bitonal_loss, "bitonal_baseline_f1": bitonal_bf1} if bitonal > 0 else {}
            torch.save({**state, "val": {"loss": val_loss, "baseline_f1": bf1, "region_f1": rf1, "ends_f1": ef1, **bitonal_val}}, args.run / "best.pt")
        torch.save(state, args.run / "last.pt.tmp")
        (args.run / "last.pt.tmp").replace(args.run / "last.pt")
        if args.max_minutes is not None and (time.time() - started) / 60 > args.max_minutes:
            print("time budget reached; resume with --resume", flush=True)
            break
    (args.run / "summary.json").write_text(json.dumps({"epochs": epoch, "best_val_loss": best}, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
