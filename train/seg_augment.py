"""One training example: a random crop of a page under a random similarity transform, its target maps
under the same transform, and the degradations the val pages show (faded ink, bleed-through, blur,
noise, tinted paper, dark scanner background past the page edge, a ruler laid on the page).

All randomness comes from the numpy Generator passed in, so an example is a function of (page, seed).
Images are floats with 1 = white paper, 0 = black ink.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from seg_data import Page


def sampling_grid(centre, angle, scale, size, source_w, source_h, step):
    """grid_sample grid for a size x size output whose pixel centres step `step` input-crop pixels apart,
    mapped onto a source of source_w x source_h (pixel units of that source)."""
    c, s = math.cos(angle), math.sin(angle)
    offsets = (np.arange(size) + 0.5) * step - size * step / 2
    u, v = np.meshgrid(offsets, offsets)
    x = centre[0] + (c * u - s * v) / scale
    y = centre[1] + (s * u + c * v) / scale
    grid = np.stack([2 * x / source_w - 1, 2 * y / source_h - 1], axis=-1)
    return torch.from_numpy(grid[None].astype(np.float32))


def gaussian_blur(img: torch.Tensor, sigma: float) -> torch.Tensor:
    radius = max(1, int(math.ceil(2.5 * sigma)))
    xs = torch.arange(-radius, radius + 1, dtype=torch.float32)
    k = torch.exp(-(xs**2) / (2 * sigma * sigma))
    k = k / k.sum()
    img = F.conv2d(F.pad(img, (radius, radius, 0, 0), mode="replicate"), k.view(1, 1, 1, -1))
    return F.conv2d(F.pad(img, (0, 0, radius, radius), mode="replicate"), k.view(1, 1, -1, 1))


def make_example(page: Page, g: np.random.Generator, crop: int, augment: bool = True, bitonal_chance: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(image [1, crop, crop] with 1 = paper, target [channels, crop/2, crop/2] of 0/1).

    With chance `bitonal_chance` the crop comes from one of the page's bitonal versions (seg_data.attach_bitonal), as an
    archive's 1-bit scan reaches the segmenter: only the geometry changes, since its paper and ink are pure white and
    black. Draws nothing more when the chance is 0, so that earlier runs replay their examples."""
    h, w = page.image.shape
    th, tw = page.target.shape[1:]
    source = page.image
    bitonal = augment and bitonal_chance > 0 and bool(page.bitonal) and g.random() < bitonal_chance
    if bitonal:
        source = page.bitonal[int(g.integers(len(page.bitonal)))]
    ink = torch.from_numpy(255 - source).float().div(255)[None, None]
    target = torch.from_numpy(page.target).float()[None]
    if augment:
        scale = math.exp(g.uniform(math.log(0.7), math.log(1.35)))
        angle = math.radians(g.uniform(-12, 12) if g.random() < 0.1 else g.uniform(-3, 3))
    else:
        scale, angle = 1.0, 0.0
    centre = (g.uniform(0.1, 0.9) * w, g.uniform(0.1, 0.9) * h)
    grid = sampling_grid(centre, angle, scale, crop, w, h, 1)
    sampled_ink = F.grid_sample(ink, grid, mode="bilinear", padding_mode="zeros", align_corners=False)[0]
    inside = F.grid_sample(torch.ones_like(ink), grid, mode="bilinear", padding_mode="zeros", align_corners=False)[0]
    target_grid = sampling_grid((centre[0] * tw / w, centre[1] * th / h), angle, scale, crop // 2, tw, th, 2 * tw / w)
    sampled_target = (F.grid_sample(target, target_grid, mode="bilinear", padding_mode="zeros", align_corners=False)[0] > 0.5).float()
    image = 1 - sampled_ink
    if not augment:
        return image, sampled_target
    if bitonal:  # past the page's edge stays white: Sauvola's threshold turns a scanner's flat surround white
        return image, sampled_target

    if g.random() < 0.3:  # bleed-through: the page's own writing, mirrored, faint and blurred
        mirrored = F.grid_sample(ink.flip(-1), grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        mirrored = gaussian_blur(mirrored, g.uniform(0.8, 2.0))[0]
        image = image * (1 - g.uniform(0.1, 0.35) * mirrored)
    if g.random() < 0.4:  # faded ink
        image = 1 - (1 - image) * g.uniform(0.3, 1.0)
    lo, hi = g.uniform(0.0, 0.25), g.uniform(0.75, 1.0)  # tinted paper, weak contrast
    image = lo + (hi - lo) * image
    image = image.clamp(0, 1) ** g.uniform(0.7, 1.5)
    if g.random() < 0.5:  # scanner background past the page edge
        background = g.uniform(0.0, 0.45)
        image = image * inside + background * (1 - inside)
    else:
        image = image * inside + (1 - inside) * float(hi)
    if g.random() < 0.12:  # a ruler along one edge of the crop, covering what lies under it
        image, sampled_target = lay_ruler(image, sampled_target, g)
    if g.random() < 0.3:
        image = gaussian_blur(image[None], g.uniform(0.4, 1.4))[0]
    image = image + torch.from_numpy(g.normal(0, g.uniform(0, 0.05), image.shape).astype(np.float32))
    return image.clamp(0, 1), sampled_target


def lay_ruler(image: torch.Tensor, target: torch.Tensor, g: np.random.Generator):
    size = image.shape[-1]
    width = int(g.integers(18, 48))
    start = 0 if g.random() < 0.5 else size - width
    ruler = torch.full((width, size), float(g.uniform(0.75, 1.0)))
    ruler[[0, -1], :] = 0.1
    pitch = int(g.integers(6, 14))
    for i, x in enumerate(range(int(g.integers(0, pitch)), size, pitch)):
        length = width // 2 if i % 10 == 0 else width // 4
        ruler[:length, x] = 0.15
    vertical = g.random() < 0.5
    if vertical:
        ruler = ruler.t()
        image[0, :, start : start + width] = ruler
        target[:, :, start // 2 : (start + width + 1) // 2] = 0
    else:
        image[0, start : start + width, :] = ruler
        target[:, start // 2 : (start + width + 1) // 2, :] = 0
    return image, target
