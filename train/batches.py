"""Turns dataset lines into model-ready tensors: decode, (augment), scale to model height, normalise."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from augment import EVALUATION_K, EVALUATION_WINDOW, augment_scaled, augment_source, random_width_scale, sauvola
from data import SOURCE_HEIGHT, ImageStore, Line
from model import output_length

MAX_SIDE_PAD = 12  # source pixels of extra white margin added at random in training


@dataclass
class Batch:
    images: torch.Tensor  # N, 1, H, W normalised
    widths: list[int]  # content width of each line at model height
    frames: torch.Tensor  # CTC input lengths
    targets: torch.Tensor  # concatenated class indices
    target_lengths: torch.Tensor
    texts: list[str]


def encode(text: str, index: dict[str, int]) -> list[int]:
    """Characters outside the charset are dropped from the target (they cannot be predicted)."""
    return [index[ch] for ch in text if ch in index]


def scaled_width(width: int, height: int) -> int:
    return max(4, round(width * height / SOURCE_HEIGHT))


def to_model_height(x: torch.Tensor, height: int) -> torch.Tensor:
    """Area averaging from the 64 px source: exact 2x2 mean at height 32."""
    if height == SOURCE_HEIGHT:
        return x
    return F.interpolate(x, size=(height, scaled_width(x.shape[-1], height)), mode="area")


def make_batch(
    lines: list[Line],
    store: ImageStore,
    index: dict[str, int],
    height: int,
    mean: float,
    std: float,
    generator: torch.Generator | None,
    width_stride: int = 4,
    bitonal_chance: float = 0.0,
) -> Batch:
    """generator=None: evaluation (no augmentation, no extra margins). bitonal_chance: in training, the chance that a
    line is made bitonal (augment.bitonal); in evaluation, 1 makes every line bitonal (Sauvola, augment.EVALUATION_WINDOW and _K)."""
    train = generator is not None
    images: list[torch.Tensor] = []
    offsets: list[int] = []
    for line in lines:
        img = torch.from_numpy(store.load(line.file).astype(np.float32) / 255.0)[None, None]
        if train:
            factor = random_width_scale(generator)
            new_width = max(8, round(img.shape[-1] * factor))
            img = F.interpolate(img, size=(SOURCE_HEIGHT, new_width), mode="bilinear", align_corners=False, antialias=factor < 1)
            left = int(torch.randint(0, MAX_SIDE_PAD + 1, (1,), generator=generator))
            right = int(torch.randint(0, MAX_SIDE_PAD + 1, (1,), generator=generator))
            img = F.pad(img, (left, right, 0, 0), value=1.0)
        images.append(img)
        offsets.append(img.shape[-1])
    width = max(offsets)
    # round the padded width so that every scaled width is a whole number of CTC frames
    source_step = width_stride * SOURCE_HEIGHT // height if SOURCE_HEIGHT % height == 0 else 1
    width = -(-width // source_step) * source_step
    batch = torch.ones(len(images), 1, SOURCE_HEIGHT, width)
    for i, img in enumerate(images):
        batch[i, :, :, : img.shape[-1]] = img[0]
    if train:
        batch = augment_source(batch, generator, bitonal_chance)
    elif bitonal_chance >= 1:
        batch = sauvola(batch, EVALUATION_WINDOW, EVALUATION_K)
    batch = to_model_height(batch, height)
    if train:
        batch = augment_scaled(batch, generator)
    batch = (batch - mean) / std

    widths = [min(batch.shape[-1], scaled_width(w, height)) for w in offsets]
    frames = torch.tensor([max(1, output_length(w, width_stride)) for w in widths], dtype=torch.long)
    encoded = [encode(line.text, index) for line in lines]
    targets = torch.tensor([k for e in encoded for k in e], dtype=torch.long)
    target_lengths = torch.tensor([len(e) for e in encoded], dtype=torch.long)
    return Batch(batch, widths, frames, targets, target_lengths, [line.text for line in lines])


def pixel_statistics(lines: list[Line], store: ImageStore, height: int, sample: int = 1000) -> tuple[float, float]:
    """Mean and standard deviation of grey levels (0..1) at model height over evenly spaced lines."""
    step = max(1, len(lines) // sample)
    total = 0.0
    total_sq = 0.0
    count = 0
    for line in lines[::step]:
        img = torch.from_numpy(store.load(line.file).astype(np.float32) / 255.0)[None, None]
        img = to_model_height(img, height)
        total += float(img.sum())
        total_sq += float((img * img).sum())
        count += img.numel()
    mean = total / count
    return mean, (total_sq / count - mean * mean) ** 0.5
