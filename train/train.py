"""Train the CTC line recognizer on htr-lines; checkpoints often and resumes exactly.

    python3 train/train.py --dataset ../shared/datasets/htr-lines --run /work/cache/hwr-train/run1
    python3 train/train.py --run /work/cache/hwr-train/run1 --resume

See train/README.md for the full set of commands.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import make_batch, pixel_statistics  # noqa: E402
from data import ImageStore, build_charset, ensure_extracted, read_split, save_json, width_batches, write_charset  # noqa: E402
from metrics import ErrorRate, greedy_decode  # noqa: E402
from model import CRNN, ModelConfig, count_parameters  # noqa: E402
from widen import widen_recurrent_head  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CSV_FIELDS = ["epoch", "steps", "train_loss", "val_loss", "val_cer", "val_wer", "lr", "epoch_seconds", "elapsed_seconds"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"), help="where the tar shards are unpacked")
    p.add_argument("--run", type=Path, required=True, help="run directory: checkpoints, charset, log CSV")
    p.add_argument("--resume", action="store_true", help="continue from RUN/last.pt (settings come from the checkpoint)")
    p.add_argument("--epochs", type=int, default=None, help="length of the learning-rate schedule (default 12; on --resume, changes it)")
    p.add_argument("--height", type=int, default=32)
    p.add_argument("--channels", type=str, default="16,48,96,96,128")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--temporal-layers", type=int, default=6)
    p.add_argument("--kernel", type=int, default=5)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--width-stride", type=int, default=2, choices=(2, 4), help="line pixels (at model height) per CTC frame")
    p.add_argument("--recurrent-layers", type=int, default=0, help="bidirectional LSTM layers after the convolutions (0: none)")
    p.add_argument("--recurrent-hidden", type=int, default=0, help="LSTM units per direction (0: hidden/2, added to the convolutional features)")
    p.add_argument(
        "--init-from",
        type=Path,
        default=None,
        help="start a new run from this checkpoint's weights (same charset, normalisation and layer shapes; "
        "the width stride may differ; a larger --recurrent-hidden widens its LSTM head without changing its output, widen.py) "
        "with a fresh optimizer and schedule",
    )
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--batch-width", type=int, default=24000, help="max sum of padded source widths per batch")
    p.add_argument("--max-batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=0, help="DataLoader processes that make and augment the training batches (0: in the training process)")
    p.add_argument("--amp", choices=("none", "bf16"), default="none", help="bf16 autocast for the forward pass on CUDA (the CTC loss stays float32)")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (cuda when available); batches are made and augmented on the CPU either way")
    p.add_argument(
        "--extra-train",
        type=str,
        action="append",
        default=[],
        help="another dataset folder in htr-lines' layout (e.g. train/synth_lines.py's) whose train lines join the training set; repeatable",
    )
    p.add_argument(
        "--bitonal",
        type=float,
        default=0.0,
        metavar="P",
        help="the chance that a training line is made bitonal, as archives scan (augment.bitonal; docs/training.md, 'Bitonal lines in training')",
    )
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training lines (timing runs)")
    p.add_argument("--limit-val", type=int, default=0)
    p.add_argument("--checkpoint-minutes", type=float, default=5.0)
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop (after a checkpoint) once this much time has passed")
    p.add_argument("--max-epochs-this-run", type=int, default=0, help="stop after this many epochs in this invocation")
    p.add_argument(
        "--snapshot-every",
        type=int,
        default=0,
        metavar="N",
        help="every N epochs also keep RUN/snapshot-EPOCH.pt (without optimizer state): points of the trajectory for average_checkpoints.py",
    )
    p.add_argument(
        "--anneal-by-deadline",
        action="store_true",
        help="with --max-minutes: the rest of the LR schedule is also driven by the clock, so that it ends at the deadline "
        "(on a shared CPU the epoch time varies threefold); the stop then validates the partial epoch",
    )
    p.add_argument(
        "--time-loader",
        action="store_true",
        help="make one epoch of training batches (--workers, --max-batch, --batch-width) without the model, print the lines a second, "
        "and stop: whether the batches' supply bounds an epoch (docs/training.md, 'v3.3')",
    )
    return p.parse_args(argv)


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "train"], capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+dirty-train" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def learning_rate(peak: float, progress: float) -> float:
    """Linear warm-up over the first 3 % of the schedule, then cosine decay to 2 % of the peak."""
    warm = 0.03
    if progress < warm:
        return peak * (0.05 + 0.95 * progress / warm)
    t = min(1.0, (progress - warm) / (1 - warm))
    return peak * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))


def batch_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed((seed * 1_000_003 + epoch) * 100_003 + index)
    return g


def add_extra_training_lines(args, charset: list[str], train_lines: list, store: ImageStore) -> list[str]:
    """Appends the train lines of each --extra-train folder whose characters the charset has (the charset stays the real
    training set's) to `train_lines`, their images to `store`; returns the folders' dataset digests."""
    known = set(charset)
    digests = []
    for folder in getattr(args, "extra_train", []):  # checkpoints from before the option have none
        images_dir, digest = ensure_extracted(Path(folder), args.cache)
        lines = [line for line in read_split(Path(folder), "train", images_dir) if set(line.text) <= known]
        extra = ImageStore(images_dir, lines)
        store.blobs.update(extra.blobs)
        store.sizes.update(extra.sizes)
        train_lines.extend(lines)
        digests.append(digest)
        print(f"extra training lines: {len(lines)} from {folder} ({digest[:19]})", flush=True)
    return digests


@torch.no_grad()
def evaluate(model: CRNN, lines, store, index, charset, height, mean, std, width_stride, device: torch.device, workers: int = 0) -> tuple[float, float, float]:
    model.eval()
    rate = ErrorRate()
    loss_sum = 0.0
    batches = width_batches(lines, 40000, 32, seed=0)
    if workers:
        made = torch.utils.data.DataLoader(
            EvalBatches(batches, lines, store, index, height, mean, std, width_stride), batch_size=None, num_workers=workers, worker_init_fn=_one_thread
        )
    else:
        made = (make_batch([lines[i] for i in ids], store, index, height, mean, std, None, width_stride) for ids in batches)
    for b in made:
        out = model(b.images.to(device)).float().cpu()
        loss = F.ctc_loss(out.transpose(0, 1), b.targets, b.frames, b.target_lengths, blank=0, zero_infinity=True, reduction="sum")
        loss_sum += float(loss)
        for hyp, ref in zip(greedy_decode(out, b.frames.tolist(), charset), b.texts):
            rate.add(hyp, ref)
    model.train()
    return loss_sum / max(1, len(lines)), rate.cer, rate.wer


class EpochBatches(torch.utils.data.Dataset):
    """Batch i of one epoch, made (decoded, augmented) with the generator of (seed, epoch, i): the same
    batches as without workers, so a resumed run still replays them exactly."""

    def __init__(self, batches, lines, store, index, cfg, mean, std, seed, epoch, bitonal_chance=0.0):
        self.batches, self.lines, self.store, self.index = batches, lines, store, index
        self.cfg, self.mean, self.std, self.seed, self.epoch = cfg, mean, std, seed, epoch
        self.bitonal_chance = bitonal_chance

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, i: int):
        lines = [self.lines[k] for k in self.batches[i]]
        generator = batch_generator(self.seed, self.epoch, i)
        return make_batch(lines, self.store, self.index, self.cfg.height, self.mean, self.std, generator, self.cfg.width_stride, self.bitonal_chance)


class EvalBatches(torch.utils.data.Dataset):
    def __init__(self, batches, lines, store, index, height, mean, std, width_stride):
        self.batches, self.lines, self.store, self.index = batches, lines, store, index
        self.height, self.mean, self.std, self.width_stride = height, mean, std, width_stride

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, i: int):
        return make_batch([self.lines[k] for k in self.batches[i]], self.store, self.index, self.height, self.mean, self.std, None, self.width_stride)


def _one_thread(_worker: int) -> None:
    torch.set_num_threads(1)


def save_checkpoint(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    args.run.mkdir(parents=True, exist_ok=True)
    last_path = args.run / "last.pt"
    state: dict | None = None
    if args.resume:
        state = torch.load(last_path, map_location="cpu", weights_only=False)
        saved = state["args"]
        # everything that shapes the run comes from the checkpoint; only stopping rules are taken from the command line
        for key in ("max_minutes", "max_epochs_this_run", "checkpoint_minutes", "threads", "resume", "anneal_by_deadline", "workers", "amp", "device"):
            saved[key] = getattr(args, key)
        epochs_before = saved["epochs"]
        if args.epochs is not None and args.epochs != saved["epochs"]:
            # a shorter or longer schedule from here on: the learning rate jumps to the new curve's value
            print(f"schedule changed on resume: {saved['epochs']} -> {args.epochs} epochs", flush=True)
            saved["epochs"] = args.epochs
        args = argparse.Namespace(**saved)
        args.run = Path(args.run)
        args.dataset = Path(args.dataset)
        args.cache = Path(args.cache)
    if args.epochs is None:
        args.epochs = 12
    torch.set_num_threads(args.threads)
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if getattr(args, "device", "auto") == "auto" else args.device)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    started = time.time()
    images_dir, digest = ensure_extracted(args.dataset, args.cache)
    train_lines = read_split(args.dataset, "train", images_dir)
    val_lines = read_split(args.dataset, "val", images_dir)
    if args.limit_train:
        train_lines = train_lines[: args.limit_train]
    if args.limit_val:
        val_lines = val_lines[: args.limit_val]
    store = ImageStore(images_dir, train_lines + val_lines)

    init_state = torch.load(args.init_from, map_location="cpu", weights_only=False) if state is None and getattr(args, "init_from", None) else None
    if init_state is not None:
        # the new model reads the same characters with the same pixel normalisation as the one it starts from
        charset, mean, std = init_state["meta"]["charset"], init_state["meta"]["mean"], init_state["meta"]["std"]
        if init_state["meta"]["dataset_digest"] != digest:
            # e.g. v2, trained on an earlier release of htr-lines: what must match is the charset (checked next) and
            # the normalisation (taken from the checkpoint); the digest it was trained on is recorded below
            print(f"note: --init-from was trained on another release of the dataset ({init_state['meta']['dataset_digest']})", flush=True)
        if not args.limit_train and charset != build_charset(train_lines):
            raise SystemExit("--init-from has another charset than this training set")
        init_cfg = ModelConfig.from_dict(init_state["model_config"])
        cfg = ModelConfig.from_dict(
            {
                **init_state["model_config"],
                "width_stride": args.width_stride,
                "dropout": args.dropout,
                "recurrent_layers": args.recurrent_layers,
                "recurrent_hidden": getattr(args, "recurrent_hidden", 0),
            }
        )
        meta = {
            "dataset_digest": digest,
            "training_commit": git_commit(),
            "mean": mean,
            "std": std,
            "charset": charset,
            "initialised_from": {
                "checkpoint": str(args.init_from),
                "epochs": init_state.get("epochs_done", init_state["epoch"]),
                "val_cer": init_state.get("val_cer"),
                "training_commit": init_state["meta"]["training_commit"],
                "dataset_digest": init_state["meta"]["dataset_digest"],
                "width_stride": init_state["model_config"].get("width_stride", 4),
            },
        }
    elif state is None:
        charset = build_charset(train_lines)
        mean, std = pixel_statistics(train_lines, store, args.height)
        cfg = ModelConfig(
            num_classes=len(charset) + 1,
            height=args.height,
            channels=tuple(int(c) for c in args.channels.split(",")),
            hidden=args.hidden,
            temporal_layers=args.temporal_layers,
            kernel=args.kernel,
            dropout=args.dropout,
            width_stride=args.width_stride,
            recurrent_layers=args.recurrent_layers,
            recurrent_hidden=args.recurrent_hidden,
        )
        meta = {"dataset_digest": digest, "training_commit": git_commit(), "mean": mean, "std": std, "charset": charset}
    else:
        meta = state["meta"]
        meta.setdefault("resumed_with", []).append(git_commit())
        if meta["dataset_digest"] != digest:
            raise SystemExit(f"dataset changed since the checkpoint: {digest} != {meta['dataset_digest']}")
        charset, mean, std = meta["charset"], meta["mean"], meta["std"]
        cfg = ModelConfig.from_dict(state["model_config"])
    extra_digests = add_extra_training_lines(args, charset, train_lines, store)
    if state is None:
        meta["extra_train"] = extra_digests
    elif meta.get("extra_train", []) != extra_digests:
        raise SystemExit(f"--extra-train data changed since the checkpoint: {extra_digests} != {meta.get('extra_train', [])}")
    write_charset(charset, args.run / "charset.txt")
    index = {ch: i + 1 for i, ch in enumerate(charset)}

    model = CRNN(cfg).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    if init_state is not None:
        init_weights = init_state["model"]
        if init_cfg.recurrent_layers and cfg.recurrent_layers == init_cfg.recurrent_layers and cfg.recurrent_units > init_cfg.recurrent_units:
            # a wider LSTM head that starts out computing exactly what the checkpoint computes (widen.py)
            init_weights = widen_recurrent_head(init_weights, init_cfg, cfg.recurrent_units, torch.Generator().manual_seed(args.seed))
            meta["initialised_from"]["widened_recurrent_units"] = [init_cfg.recurrent_units, cfg.recurrent_units]
            print(f"widened the LSTM head from {init_cfg.recurrent_units} to {cfg.recurrent_units} units a direction", flush=True)
        # every layer of the checkpoint must fit; only layers it does not have (an added LSTM) start fresh
        missing, unexpected = model.load_state_dict({k: v.to(device) for k, v in init_weights.items()}, strict=False)
        if unexpected or any(not key.startswith("recurrent.") for key in missing):
            raise SystemExit(f"--init-from does not fit this model: missing {missing}, unexpected {unexpected}")
        del init_state, init_weights
    epoch, position, best_cer, elapsed_before = 0, 0, float("inf"), 0.0
    schedule_reached = 0.0  # the schedule never goes back, even when a resume lengthens it
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])  # follows the parameters' device
        epoch, position, best_cer = state["epoch"], state["position"], state["best_cer"]
        elapsed_before = state["elapsed_seconds"]
        if "schedule_progress" in state:
            schedule_reached = state["schedule_progress"]
        else:  # checkpoints written before this field existed: the epoch-based progress of the schedule then in force
            batches_then = len(width_batches(train_lines, args.batch_width, args.max_batch, seed=args.seed * 1000 + state["epoch"]))
            schedule_reached = (state["epoch"] + state["position"] / batches_then) / epochs_before
        torch.set_rng_state(state["torch_rng"])
    print(
        f"train {len(train_lines)} lines, val {len(val_lines)}, charset {len(charset)}, params {count_parameters(model)}, "
        f"height {cfg.height}, stride {cfg.width_stride}, device {device}, mean {mean:.4f} std {std:.4f}, start epoch {epoch} batch {position}, setup {time.time() - started:.1f}s",
        flush=True,
    )
    save_json(args.run / "config.json", {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "model": cfg.to_dict(), "meta": {k: v for k, v in meta.items() if k != "charset"}})

    log_path = args.run / "log.csv"
    if not log_path.exists():
        with open(log_path, "w", newline="") as f:
            csv.writer(f).writerow(CSV_FIELDS)

    run_started = time.time()
    start_progress = (epoch + position / max(1, len(width_batches(train_lines, args.batch_width, args.max_batch, seed=args.seed * 1000 + epoch)))) / args.epochs
    start_progress = max(start_progress, schedule_reached) if args.anneal_by_deadline else start_progress
    progress_now = [start_progress]

    def schedule_progress(epoch_progress: float) -> float:
        if not (args.anneal_by_deadline and args.max_minutes):
            return epoch_progress
        clock = min(1.0, (time.time() - run_started) / (60 * args.max_minutes))
        return max(epoch_progress, start_progress + (1 - start_progress) * clock)

    last_checkpoint = time.time()
    epochs_this_run = 0

    def snapshot(epoch_: int, position_: int, loss_sum_: float, loss_count_: int, epoch_seconds_: float) -> dict:
        return {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "model_config": cfg.to_dict(),
            "meta": meta,
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "epoch": epoch_,
            "position": position_,
            "partial_loss": (loss_sum_, loss_count_),
            "epoch_seconds": epoch_seconds_,
            "best_cer": best_cer,
            "elapsed_seconds": elapsed_before + time.time() - run_started,
            "torch_rng": torch.get_rng_state(),
            "schedule_progress": progress_now[0],
        }

    workers = getattr(args, "workers", 0)
    autocast = device.type == "cuda" and getattr(args, "amp", "none") == "bf16"

    bitonal_chance = getattr(args, "bitonal", 0.0)  # checkpoints from before the option have none

    def epoch_batches(batches: list[list[int]], epoch_: int, start: int):
        """(index, batch) from start on; with --workers made in DataLoader processes, same seeds, same order."""
        if not workers:
            for i in range(start, len(batches)):
                lines_ = [train_lines[k] for k in batches[i]]
                yield i, make_batch(lines_, store, index, cfg.height, mean, std, batch_generator(args.seed, epoch_, i), cfg.width_stride, bitonal_chance)
            return
        dataset = EpochBatches(batches, train_lines, store, index, cfg, mean, std, args.seed, epoch_, bitonal_chance)
        loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=None,
            sampler=range(start, len(batches)),
            num_workers=workers,
            prefetch_factor=4,
            worker_init_fn=_one_thread,
        )
        yield from zip(range(start, len(batches)), loader)

    if getattr(args, "time_loader", False):
        time_loader(width_batches(train_lines, args.batch_width, args.max_batch, seed=args.seed * 1000 + epoch), epoch_batches, epoch, workers)
        return

    model.train()
    while epoch < args.epochs:
        batches = width_batches(train_lines, args.batch_width, args.max_batch, seed=args.seed * 1000 + epoch)
        loss_sum, loss_count = (state["partial_loss"] if state is not None and position > 0 else (0.0, 0))
        epoch_seconds = state["epoch_seconds"] if state is not None and position > 0 else 0.0
        segment_start = time.time()
        state = None
        for i, b in epoch_batches(batches, epoch, position):
            progress_now[0] = schedule_progress((epoch + i / len(batches)) / args.epochs)
            lr = learning_rate(args.lr, progress_now[0])
            for group in optimizer.param_groups:
                group["lr"] = lr
            if autocast:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = model(b.images.to(device, non_blocking=True)).float()
            else:
                out = model(b.images.to(device))
            loss = F.ctc_loss(out.transpose(0, 1), b.targets.to(device), b.frames.to(device), b.target_lengths.to(device), blank=0, zero_infinity=True, reduction="mean")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            loss_sum += float(loss) * len(b.texts)
            loss_count += len(b.texts)
            if i % 50 == 0:
                print(f"epoch {epoch} batch {i}/{len(batches)} loss {loss_sum / max(1, loss_count):.4f} lr {lr:.2e} {time.time() - segment_start + epoch_seconds:.0f}s", flush=True)
            now = time.time()
            out_of_time = args.max_minutes and (now - run_started) / 60 >= args.max_minutes
            if out_of_time or (now - last_checkpoint) / 60 >= args.checkpoint_minutes:
                save_checkpoint(last_path, snapshot(epoch, i + 1, loss_sum, loss_count, epoch_seconds + now - segment_start))
                last_checkpoint = now
                if out_of_time:
                    print(f"stopping: --max-minutes reached at epoch {epoch} batch {i + 1}", flush=True)
                    if args.anneal_by_deadline:
                        # the schedule ended here: validate the partial epoch like a full one
                        val_loss, cer, wer = evaluate(model, val_lines, store, index, charset, cfg.height, mean, std, cfg.width_stride, device, workers)
                        done = epoch + (i + 1) / len(batches)
                        elapsed = elapsed_before + time.time() - run_started
                        with open(log_path, "a", newline="") as f:
                            csv.writer(f).writerow([f"{done:.2f}", i + 1, f"{loss_sum / max(1, loss_count):.4f}", f"{val_loss:.4f}", f"{cer:.4f}", f"{wer:.4f}", f"{lr:.2e}", f"{epoch_seconds + now - segment_start:.0f}", f"{elapsed:.0f}"])
                        print(f"partial epoch {done:.2f}: val loss {val_loss:.4f} CER {cer:.4f} WER {wer:.4f}", flush=True)
                        if cer < best_cer:
                            best_cer = cer
                            best = snapshot(epoch, i + 1, loss_sum, loss_count, epoch_seconds + now - segment_start)
                            best["val_cer"], best["val_wer"], best["epochs_done"] = cer, wer, round(done, 2)
                            save_checkpoint(args.run / "best.pt", best)
                    return
        epoch_seconds += time.time() - segment_start
        val_loss, cer, wer = evaluate(model, val_lines, store, index, charset, cfg.height, mean, std, cfg.width_stride, device, workers)
        epoch += 1
        elapsed = elapsed_before + time.time() - run_started
        with open(log_path, "a", newline="") as f:
            csv.writer(f).writerow([epoch, len(batches), f"{loss_sum / max(1, loss_count):.4f}", f"{val_loss:.4f}", f"{cer:.4f}", f"{wer:.4f}", f"{lr:.2e}", f"{epoch_seconds:.0f}", f"{elapsed:.0f}"])
        print(f"epoch {epoch} done: train loss {loss_sum / max(1, loss_count):.4f} val loss {val_loss:.4f} CER {cer:.4f} WER {wer:.4f} ({epoch_seconds:.0f}s)", flush=True)
        if cer < best_cer:
            best_cer = cer
            best = snapshot(epoch, 0, 0.0, 0, 0.0)
            best["val_cer"], best["val_wer"], best["epochs_done"] = cer, wer, epoch
            save_checkpoint(args.run / "best.pt", best)
        at_epoch_end = snapshot(epoch, 0, 0.0, 0, 0.0)
        save_checkpoint(last_path, at_epoch_end)
        if getattr(args, "snapshot_every", 0) and epoch % args.snapshot_every == 0:
            kept = {key: value for key, value in at_epoch_end.items() if key != "optimizer"}
            kept["val_cer"], kept["val_wer"], kept["epochs_done"] = cer, wer, epoch
            save_checkpoint(args.run / f"snapshot-{epoch:03d}.pt", kept)
        last_checkpoint = time.time()
        position = 0
        epochs_this_run += 1
        if args.max_epochs_this_run and epochs_this_run >= args.max_epochs_this_run:
            return
        if args.max_minutes and (time.time() - run_started) / 60 >= args.max_minutes:
            print("stopping: --max-minutes reached at an epoch boundary", flush=True)
            return


def time_loader(batches: list[list[int]], epoch_batches, epoch: int, workers: int) -> None:
    started = time.time()
    first_batch = None
    lines = 0
    for _, batch in epoch_batches(batches, epoch, 0):
        lines += len(batch.texts)
        if first_batch is None:
            first_batch = time.time() - started
    seconds = time.time() - started
    print(
        f"loader: {lines} lines in {len(batches)} batches, {seconds:.1f} s ({lines / seconds:.0f} lines/s; the first batch after {first_batch:.1f} s), {workers} workers",
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
