"""Synthetic printed lines for a print reader fine-tuned from our recognizer (issue 43, a first measurement).

    /usr/bin/python3 train/synth_print_lines.py --dataset ../shared/datasets/htr-lines --out /work/cache/print-ft/data --lines 4000
    /usr/bin/python3 train/finetune.py --base models/hwr-htr-v3 --lines /work/cache/print-ft/data/lines.jsonl \\
        --run /work/cache/print-ft/run --out /work/cache/print-ft/model --freeze none --line-passes 8000 --min-epochs 1 --patience 0

Writes the folder finetune.py reads (lines.jsonl, one {"id", "image", "text", "page", "split"} a line, and
img/): `--lines` training texts of the dataset rendered in print fonts, and the dataset's own typewritten and
printed lines (line_type Typewritten or Print: the Stanford letters), its train split for training and its
val split as the validation lines, so that the checkpoint kept is the one that reads real print best. Only
training texts are rendered: nothing of the validation documents leaks in.

Each synthetic line: a training text (a third of the time two, as a book's line is longer), a font that
draws every character of it, at a random size, in dark ink on paper of a random grey, sometimes turned by
under a degree, cut along the font's line height with a random margin above, below and at the ends (as a
detector's box with its context), blurred, scaled down as a scan of lower resolution is, with noise, saved
as JPEG of a random quality. Fonts: Debian's print fonts (fonts-urw-base35, fonts-dejavu-core,
fonts-liberation2: FONT_DIRS) or any .ttf/.otf given with --fonts; none is shipped. A line is a function of
(--seed, its index).

docs/benchmarks.md (37th session) has what a fine-tune on these lines read and how fast.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_lines import Coverage, read_training_texts  # noqa: E402

FONT_DIRS = [
    Path("/usr/share/fonts/opentype/urw-base35"),
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/truetype/liberation"),
    Path("/usr/share/fonts/truetype/liberation2"),
]
PRINTED_TYPES = ("Typewritten", "Print")


def default_fonts() -> list[Path]:
    """The print fonts of FONT_DIRS (light weights left out: they are hardly print on a page)."""
    return [p for d in FONT_DIRS if d.is_dir() for p in sorted(d.glob("*.[ot]tf")) if "Light" not in p.name]


def read_rows(dataset: Path, split: str) -> list[dict[str, str]]:
    with open(dataset / f"{split}.tsv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


_coverage: dict[Path, Coverage] = {}


def draws_every_character(font_path: Path, text: str) -> bool:
    """Whether the font has a glyph of its own for each character (not the box of a missing one)."""
    if font_path not in _coverage:
        _coverage[font_path] = Coverage(ImageFont.truetype(str(font_path), 72))
    return _coverage[font_path].covers(text)


def render_line(text: str, font_path: Path, g: np.random.Generator) -> Image.Image | None:
    """`text` printed in the font as a degraded scan of one line (8-bit grey); None where the font lacks a character."""
    if not draws_every_character(font_path, text):
        return None
    size = int(g.integers(36, 65))
    font = ImageFont.truetype(str(font_path), size)
    ascent, descent = font.getmetrics()
    line_height = ascent + descent
    paper = int(g.integers(185, 256))
    ink = int(g.integers(0, 71))
    canvas = Image.new("L", (int(font.getlength(text)) + 2 * size, line_height + 2 * size), paper)
    ImageDraw.Draw(canvas).text((size, size + ascent), text, font=font, fill=ink, anchor="ls")
    if g.random() < 0.5:
        canvas = canvas.rotate(float(g.uniform(-0.8, 0.8)), resample=Image.BILINEAR, fillcolor=paper)
    ink_box = canvas.point(lambda v: 255 if v < (paper + ink) / 2 else 0).getbbox()
    if ink_box is None:
        return None
    top = size - int(line_height * g.uniform(0.05, 0.35))
    bottom = size + line_height + int(line_height * g.uniform(0.05, 0.35))
    left = max(0, ink_box[0] - int(line_height * g.uniform(0.1, 0.6)))
    right = min(canvas.width, ink_box[2] + int(line_height * g.uniform(0.1, 0.6)))
    line = canvas.crop((left, top, right, bottom))
    if g.random() < 0.7:
        line = line.filter(ImageFilter.GaussianBlur(float(g.uniform(0.2, 1.3))))
    scale = g.uniform(0.35, 1.0)
    line = line.resize((max(1, round(line.width * scale)), max(8, round(line.height * scale))), Image.BILINEAR)
    noisy = np.asarray(line, dtype=np.float32) + g.normal(0, g.uniform(0, 9), (line.height, line.width))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def synthesise(dataset: Path, out: Path, count: int, seed: int = 37, font_paths: list[Path] | None = None) -> dict[str, int]:
    """Writes out/lines.jsonl and out/img/; returns how many lines of each kind it wrote."""
    fonts = font_paths if font_paths is not None else default_fonts()
    if not fonts:
        raise SystemExit(f"no print font found in {', '.join(map(str, FONT_DIRS))}: install fonts-urw-base35 or give --fonts")
    texts = [row["text_norm"].strip() for row in read_training_texts(dataset)]
    (out / "img").mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, str]] = []
    index = 0
    while len(lines) < count:
        g = np.random.default_rng([seed, index])
        text = texts[int(g.integers(len(texts)))]
        if g.random() < 0.3:
            text = f"{text} {texts[int(g.integers(len(texts)))]}"
        font = fonts[int(g.integers(len(fonts)))]
        image = render_line(text, font, g)
        if image is not None:
            name = f"img/synth-{index:06d}.jpg"
            image.save(out / name, format="JPEG", quality=int(g.integers(35, 93)))
            lines.append({"id": f"synth-{index}", "image": name, "text": text, "page": f"synth-{index // 20}", "split": "train"})
        index += 1
        if index > 20 * count + 100:
            raise SystemExit("the fonts draw too few of the training texts")
    real = {"train": 0, "val": 0}
    for split in real:
        wanted = {row["file"]: row for row in read_rows(dataset, split) if any(t in (row.get("line_type") or "") for t in PRINTED_TYPES)}
        for shard in sorted(dataset.glob(f"{split}-*.tar")):
            with tarfile.open(shard) as tar:
                for member in tar:
                    row = wanted.get(member.name)
                    if row is None or not row["text_norm"].strip():
                        continue
                    name = "img/" + member.name.replace("/", "_")
                    (out / name).write_bytes(tar.extractfile(member).read())
                    lines.append({"id": member.name, "image": name, "text": row["text_norm"], "page": row["source_page"], "split": split})
                    real[split] += 1
    with open(out / "lines.jsonl", "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return {"synthetic": count, "printed train": real["train"], "printed val": real["val"]}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, required=True, help="an htr-lines folder (train.tsv, val.tsv and their tar shards)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--lines", type=int, default=4000, help="synthetic lines to render")
    p.add_argument("--seed", type=int, default=37)
    p.add_argument("--fonts", type=Path, nargs="*", help="font files instead of Debian's print fonts")
    args = p.parse_args(argv)
    written = synthesise(args.dataset, args.out, args.lines, args.seed, args.fonts)
    print(json.dumps(written), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
