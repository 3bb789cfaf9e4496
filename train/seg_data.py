"""Pages of htr-pages as segmenter training examples: the page at the model's scale and its target maps.

A page is scaled so that its longer side is `side` pixels (the service does the same before the
segmenter runs, src/recognition/layout/line-segmenter.ts). The targets are drawn at half that scale,
the network's output resolution, one channel each:

  0 baseline  every line's baseline polyline, BASELINE_WIDTH px wide
  1 region    the inside of every line's outline polygon
  2 boundary  the outline of every line polygon, BOUNDARY_WIDTH px wide (where neighbouring lines meet)
  3 ends      a disc of END_RADIUS px at both ends of every baseline (where one line stops and the next
              on the same level starts: a margin note beside a line, a page number; kraken's separators)

Rendered pages are cached as one .npz per page, keyed by the rendering settings.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from augment import sauvola

BASELINE_WIDTH = 3
BOUNDARY_WIDTH = 2
END_RADIUS = 3
CHANNELS = ("baseline", "region", "boundary", "ends")
RENDER_VERSION = 2
# Bitonal pages as bench:capture makes them (bench/lib/capture-conditions.ts): Sauvola at the stored size with a
# window of 1/40 of the page's width and k 0.2; training variants draw the divisor and k from these ranges.
BITONAL_EVALUATION = (40.0, 0.2)
BITONAL_DIVISORS, BITONAL_KS = (28.0, 56.0), (0.1, 0.35)
BITONAL_VERSION = 1


@dataclass
class Page:
    name: str
    source: str
    image: np.ndarray  # uint8 [H, W], the page at the model's scale (longer side = side)
    target: np.ndarray  # uint8 [len(CHANNELS), ceil(H/2), ceil(W/2)], 0 or 1
    bitonal: list[np.ndarray] = field(default_factory=list)  # uint8 [H, W] each: the page made bitonal at its stored size, then scaled as `image`


def read_pages(dataset: Path, split: str):
    """(json, grayscale PIL image) of every page of a split, in shard order."""
    for shard in sorted(dataset.glob(f"{split}-*.tar")):
        with tarfile.open(shard) as tf:
            members = {m.name: m for m in tf.getmembers()}
            for name in sorted(n for n in members if n.endswith(".json")):
                page = json.load(tf.extractfile(members[name]))
                image = Image.open(io.BytesIO(tf.extractfile(members[name[:-5] + ".jpg"]).read())).convert("L")
                yield page, image


def model_size(width: int, height: int, side: int) -> tuple[int, int]:
    ratio = side / max(width, height)
    return max(1, round(width * ratio)), max(1, round(height * ratio))


def render_targets(page: dict, ratio: float, width: int, height: int) -> np.ndarray:
    """The target maps (CHANNELS) of a page at `ratio` times its stored size, `width` x `height` pixels."""
    maps = [Image.new("L", (width, height), 0) for _ in CHANNELS]
    draws = [ImageDraw.Draw(m) for m in maps]
    scale = lambda points: [((x + 0.5) * ratio - 0.5, (y + 0.5) * ratio - 0.5) for x, y in points]  # noqa: E731
    for line in page["lines"]:
        polygon = line.get("polygon")
        if polygon and len(polygon) >= 3:
            draws[1].polygon(scale(polygon), fill=1)
            draws[2].line(scale(polygon + polygon[:1]), fill=1, width=BOUNDARY_WIDTH, joint="curve")
    for line in page["lines"]:
        baseline = line.get("baseline")
        if baseline and len(baseline) >= 2:
            draws[0].line(scale(baseline), fill=1, width=BASELINE_WIDTH, joint="curve")
            for x, y in (scale(baseline)[0], scale(baseline)[-1]):
                draws[3].ellipse((x - END_RADIUS, y - END_RADIUS, x + END_RADIUS, y + END_RADIUS), fill=1)
    return np.stack([np.asarray(m, dtype=np.uint8) for m in maps])


def render_page(page: dict, image: Image.Image, side: int) -> Page:
    width, height = model_size(image.width, image.height, side)
    resized = np.asarray(image.resize((width, height), Image.LANCZOS), dtype=np.uint8)
    ratio = width / image.width / 2
    target = render_targets(page, ratio, (width + 1) // 2, (height + 1) // 2)
    return Page(page["page"], page["page"].split("_")[0], resized, target)


def load_split(dataset: Path, split: str, side: int, cache: Path) -> list[Page]:
    key = hashlib.sha256(f"{RENDER_VERSION}:{side}:{BASELINE_WIDTH}:{BOUNDARY_WIDTH}:{END_RADIUS}".encode()).hexdigest()[:10]
    folder = cache / f"{split}-{side}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    pages: list[Page] = []
    listing = folder / "pages.json"
    if listing.exists():
        for name in json.loads(listing.read_text()):
            data = np.load(folder / f"{name}.npz")
            pages.append(Page(name, name.split("_")[0], data["image"], data["target"]))
        return pages
    for page, image in read_pages(dataset, split):
        rendered = render_page(page, image, side)
        np.savez_compressed(folder / f"{rendered.name}.npz", image=rendered.image, target=rendered.target)
        pages.append(rendered)
    listing.write_text(json.dumps([p.name for p in pages]))
    return pages


def bitonal_at_size(image: Image.Image, divisor: float, k: float, size: tuple[int, int]) -> np.ndarray:
    """The page made bitonal at its stored size (Sauvola, a window of width / divisor, at least 15 px), then scaled to
    `size` as render_page scales the grey page."""
    grey = torch.from_numpy(np.asarray(image, dtype=np.float32) / 255)
    window = max(15, round(image.width / divisor))
    binary = (sauvola(grey, window, k) * 255).to(torch.uint8).numpy()
    return np.asarray(Image.fromarray(binary).resize(size, Image.LANCZOS), dtype=np.uint8)


def attach_bitonal(pages: list[Page], dataset: Path, split: str, side: int, cache: Path, variants: int, seed: int = 11) -> None:
    """Gives every page `variants` bitonal versions, each with its own window and k (training), or with variants 0 the
    one bench:capture makes (evaluation). Cached beside the split's rendering."""
    key = hashlib.sha256(f"{BITONAL_VERSION}:{side}:{variants}:{seed}:{BITONAL_EVALUATION}:{BITONAL_DIVISORS}:{BITONAL_KS}".encode()).hexdigest()[:10]
    folder = cache / f"{split}-{side}-bitonal-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "done"
    if not done.exists():
        for index, (page, image) in enumerate(read_pages(dataset, split)):
            size = model_size(image.width, image.height, side)
            if variants == 0:
                settings = [BITONAL_EVALUATION]
            else:
                g = np.random.default_rng([seed, index])
                settings = [(g.uniform(*BITONAL_DIVISORS), g.uniform(*BITONAL_KS)) for _ in range(variants)]
            stack = np.stack([bitonal_at_size(image, divisor, k, size) for divisor, k in settings])
            np.savez_compressed(folder / f"{page['page']}.npz", bitonal=stack)
        done.write_text("")
    for page in pages:
        page.bitonal = list(np.load(folder / f"{page.name}.npz")["bitonal"])
