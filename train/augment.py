"""Handwriting augmentation applied to a whole padded batch at once (torch ops, no extra CPU libraries).

Works on the 64 px source images (white = 1.0, ink dark) before they are scaled to the model height,
so that one-pixel morphology and sub-pixel distortions stay fine-grained. Every random draw comes from
the generator passed in, which the trainer seeds per (seed, epoch, batch): a resumed run replays the
same augmentation.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _uniform(g: torch.Generator, n: int, low: float, high: float) -> torch.Tensor:
    return low + (high - low) * torch.rand(n, generator=g)


def _chance(g: torch.Generator, n: int, p: float) -> torch.Tensor:
    return torch.rand(n, generator=g) < p


def affine_grid(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The sampling grid of a random slant (shear), small rotation, vertical scale and shift of each line."""
    n, _, h, w = x.shape
    shear = _uniform(g, n, -0.45, 0.45) * _chance(g, n, 0.8)
    rotation = _uniform(g, n, -0.015, 0.015)  # radians; long lines make this a few pixels at the ends
    yscale = _uniform(g, n, 0.85, 1.12)
    yshift = _uniform(g, n, -0.08, 0.08)
    theta = torch.zeros(n, 2, 3)
    # in normalised coordinates a pixel-space shear/rotation is scaled by the aspect ratio
    theta[:, 0, 0] = 1.0
    theta[:, 0, 1] = shear * (h / w)
    theta[:, 1, 0] = rotation * (w / h)
    theta[:, 1, 1] = 1.0 / yscale
    theta[:, 1, 2] = yshift
    return F.affine_grid(theta, [n, 1, h, w], align_corners=False)


def geometric(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Slant (shear), small rotation, vertical scale and shift, plus a smooth elastic displacement."""
    n, _, h, w = x.shape
    grid = affine_grid(x, g)

    # elastic: random displacements on a coarse lattice (one knot per ~16 px), smoothly upsampled; every line draws its
    # lattice, only the lines chosen for it are displaced (the upsampling is most of the cost)
    elastic = _chance(g, n, 0.6)
    amplitude = _uniform(g, n, 0.5, 2.2).view(n, 1, 1, 1)  # pixels
    coarse = torch.randn(n, 2, max(2, h // 16), max(2, w // 16), generator=g)
    chosen = torch.nonzero(elastic).flatten()
    if len(chosen):
        field = F.interpolate(coarse[chosen], size=(h, w), mode="bicubic", align_corners=False) * amplitude[chosen]
        grid[chosen, :, :, 0] += field[:, 0] * (2.0 / w)
        grid[chosen, :, :, 1] += field[:, 1] * (2.0 / h)
    return F.grid_sample(x - 1.0, grid, mode="bilinear", padding_mode="zeros", align_corners=False) + 1.0


def stroke_width(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Thicker ink (min filter) or thinner ink (max filter) on some lines."""
    draw = torch.rand(x.shape[0], generator=g)
    thick = torch.nonzero(draw < 0.2).flatten()
    thin = torch.nonzero((draw >= 0.2) & (draw < 0.35)).flatten()
    if not len(thick) and not len(thin):
        return x
    out = x.clone()
    if len(thick):
        out[thick] = -F.max_pool2d(-x[thick], 3, stride=1, padding=1)
    if len(thin):
        # a full 3x3 max erases thin strokes; blend halfway so thin pens survive
        out[thin] = 0.5 * (x[thin] + F.max_pool2d(x[thin], 3, stride=1, padding=1))
    return out


def blur(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    n = x.shape[0]
    sigma = _uniform(g, n, 0.6, 1.6)
    apply = _chance(g, n, 0.3)
    if not bool(apply.any()):
        return x
    radius = 3
    t = torch.arange(-radius, radius + 1, dtype=torch.float32)
    out = x.clone()
    for i in torch.nonzero(apply).flatten().tolist():
        k = torch.exp(-(t**2) / (2 * float(sigma[i]) ** 2))
        k = k / k.sum()
        xi = F.pad(x[i : i + 1], (radius, radius, radius, radius), mode="replicate")
        xi = F.conv2d(xi, k.view(1, 1, 1, -1))
        out[i : i + 1] = F.conv2d(xi, k.view(1, 1, -1, 1))
    return out


SAUVOLA_R = 128 / 255  # the deviation's dynamic range, as the standard 128 of 0..255
EVALUATION_WINDOW, EVALUATION_K = 31, 0.2  # every line made bitonal for evaluation (batches.make_batch): bench:capture's k


def box_mean(x: torch.Tensor, window: int) -> torch.Tensor:
    """The mean of each pixel's window x window square, cut at the edges, from an integral image (in float64: the
    deviation is a difference of two such means): four lookups a pixel, whatever the window."""
    half = window // 2
    h, w = x.shape[-2:]
    table = F.pad(x.double(), (1, 0, 1, 0)).cumsum(-1).cumsum(-2)
    ys, xs = torch.arange(h), torch.arange(w)
    top, bottom = (ys - half).clamp(min=0), (ys + half + 1).clamp(max=h)
    left, right = (xs - half).clamp(min=0), (xs + half + 1).clamp(max=w)
    rows_bottom, rows_top = table.index_select(-2, bottom), table.index_select(-2, top)
    total = (
        rows_bottom.index_select(-1, right) - rows_top.index_select(-1, right) - rows_bottom.index_select(-1, left) + rows_top.index_select(-1, left)
    )
    count = ((bottom - top).view(-1, 1) * (right - left).view(1, -1)).double()
    return (total / count).to(x.dtype)


def sauvola(x: torch.Tensor, window: int, k: float) -> torch.Tensor:
    """Sauvola's adaptive threshold: 0 (ink) where a pixel is darker than m (1 + k (s / R - 1)), m and s the mean and
    deviation of its square window (cut at the edges), else 1: bench:capture's bitonal pages (bench/lib/capture-conditions.ts),
    on values 0..1."""
    mean = box_mean(x, window)
    squares = box_mean(x * x, window)
    deviation = (squares - mean * mean).clamp(min=0.0).sqrt()
    return (x >= mean * (1 + k * (deviation / SAUVOLA_R - 1))).to(x.dtype)


def bitonal(x: torch.Tensor, g: torch.Generator, p: float) -> torch.Tensor:
    """Some lines as an archive's bitonal scan has them (Sauvola, window 21-45 px of the 64 px source, k 0.1-0.35):
    pale strokes and hairlines break or vanish, stamps and stains turn black. Draws nothing when p is 0, so that runs
    without it replay their augmentation as before."""
    if p <= 0:
        return x
    n = x.shape[0]
    chosen = torch.nonzero(_chance(g, n, p)).flatten().tolist()
    windows = torch.randint(10, 23, (n,), generator=g) * 2 + 1
    ks = _uniform(g, n, 0.1, 0.35)
    if not chosen:
        return x
    out = x.clone()
    for i in chosen:
        out[i : i + 1] = sauvola(x[i : i + 1], int(windows[i]), float(ks[i]))
    return out


def photometric(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Contrast, brightness, paper tone and gamma: faded ink, yellowed paper, dark scans."""
    n = x.shape[0]
    ink = _uniform(g, n, 0.0, 0.45).view(n, 1, 1, 1)  # darkest ink level
    paper = _uniform(g, n, 0.7, 1.0).view(n, 1, 1, 1)  # paper level
    gamma = torch.exp(_uniform(g, n, -0.4, 0.4)).view(n, 1, 1, 1)
    x = x.clamp(0.0, 1.0) ** gamma
    return ink + (paper - ink) * x


def noise(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    n = x.shape[0]
    level = _uniform(g, n, 0.0, 0.06).view(n, 1, 1, 1)
    return (x + level * torch.randn(x.shape, generator=g)).clamp(0.0, 1.0)


def augment_source(x: torch.Tensor, g: torch.Generator, bitonal_chance: float = 0.0) -> torch.Tensor:
    """Augmentations done at source resolution (before scaling to the model height)."""
    x = geometric(x, g)
    x = stroke_width(x, g)
    x = blur(x, g)
    return bitonal(x, g, bitonal_chance)


def augment_scaled(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Augmentations done at model resolution (after scaling)."""
    return noise(photometric(x, g), g)


def random_width_scale(g: torch.Generator) -> float:
    """Horizontal stretch factor of one line: handwriting width varies far more than its height.

    Mostly stretching: the model emits one frame per 4 px at height 32 and the data averages
    8.7 px per character, so squeezing by 0.75 (the first range tried) made 7 % of the training
    lines too short for their transcription under CTC and half of them tight (< 1.5 frames per
    needed frame); 0.9 keeps that to about 1 %.
    """
    return math.exp(float(_uniform(g, 1, math.log(0.9), math.log(1.25))))
