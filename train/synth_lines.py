"""Synthetic handwritten lines (issue 12, item 2): the training transcriptions rendered in handwriting fonts.

    /usr/bin/python3 train/synth_lines.py --out /work/cache/synth-lines --lines 20000
    /usr/bin/python3 train/train.py ... --extra-train /work/cache/synth-lines

Writes a folder shaped like ../shared/datasets/htr-lines with a train split only: `train-NNN.tar`
shards of JPEG lines at the dataset's height (64 px) and `train.tsv` with its columns (text and
text_norm = the transcription rendered, in upper case for the capitals-only fonts; hand_or_document = `synth:<font>`; line_type =
`Synthetic`; source_line_id = the training line whose text it is), so train.py reads it with the
same code (`--extra-train`) and the same augmentation applies. Only training texts are used:
nothing of the validation documents leaks in.

Each line: a training text (the line's own language), a font that has every character of it,
the font chosen by package first (so a family of six counts once), the text drawn word by word at a random size with random word gaps, ink darkness, stroke weight
and slant, cropped to the ink with a margin like the dataset's line boxes (a few pixels, more above
for ascenders), scaled to 64 px high. Fonts are Debian's handwriting and script font packages
(FONTS; install them with apt-get) or any .ttf/.otf given with --fonts. Everything random comes
from a generator seeded by (--seed, line index), so a line is a function of its index.
"""

from __future__ import annotations

import argparse
import csv
import io
import multiprocessing
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))

from data import SOURCE_HEIGHT  # noqa: E402
from line_shards import LineShardWriter  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# Debian packages (bookworm) and their fonts' licences, as /usr/share/doc/PACKAGE/copyright says for the font
# files. The rendered lines are training data, not the fonts: none is shipped, and the model trained on
# them carries no font data.
FONTS: dict[str, tuple[str, str]] = {
    "/usr/share/fonts/truetype/ecolier-court/Ecolier-court.ttf": ("fonts-ecolier-court", "OFL-1.1"),
    "/usr/share/fonts/opentype/bwht/BecauseWeBuild-Regular.otf": ("fonts-bwht", "OFL-1.1"),
    "/usr/share/fonts/opentype/bwht/BecauseWeConnect-Regular.otf": ("fonts-bwht", "OFL-1.1"),
    "/usr/share/fonts/opentype/bwht/BecauseWeCreate-Regular.otf": ("fonts-bwht", "OFL-1.1"),
    "/usr/share/fonts/opentype/bwht/BecauseWeLearn-Regular.otf": ("fonts-bwht", "OFL-1.1"),
    "/usr/share/fonts/opentype/bwht/BecauseWeMentor-Regular.otf": ("fonts-bwht", "OFL-1.1"),
    "/usr/share/fonts/opentype/bwht/BecauseWeOrganize-Regular.otf": ("fonts-bwht", "OFL-1.1"),
    "/usr/share/fonts/opentype/dancingscript/DancingScript-Regular.otf": ("fonts-dancingscript", "OFL-1.1"),
    "/usr/share/fonts/truetype/breip/Breip.ttf": ("fonts-breip", "OFL-1.0"),
    "/usr/share/fonts/truetype/femkeklaver/femkeklaver.ttf": ("fonts-femkeklaver", "CC-BY-SA-3.0"),
    "/usr/share/fonts/truetype/fifthhorseman/dkg.ttf": ("fonts-dkg-handwriting", "GPL-3+ (font source OFL-1.1)"),
    "/usr/share/fonts/truetype/kristi/Kristi.ttf": ("fonts-kristi", "OFL-1.1"),
    "/usr/share/fonts/truetype/rufscript/Rufscript010.ttf": ("fonts-rufscript", "GPL-3+ with font exception"),
    "/usr/share/fonts/truetype/humor-sans/Humor-Sans.ttf": ("fonts-humor-sans", "OFL-1.1"),
}
# fonts whose lower-case letters are small capitals: their lines are rendered and labelled in upper case
CAPITALS_ONLY = {"fonts-bwht"}
RENDER_SIZE = 72  # font size the text is drawn at before scaling to SOURCE_HEIGHT


@dataclass(frozen=True)
class Font:
    path: Path
    package: str
    licence: str

    def text_for(self, text: str) -> str:
        """What this font's line says for a training text: the text, or its upper case for a capitals-only font."""
        return text.upper() if self.package in CAPITALS_ONLY else text


class Coverage:
    """Which characters a font draws: a character whose bitmap is empty or the same as an unassigned code point's is missing."""

    def __init__(self, font: ImageFont.FreeTypeFont):
        self.font = font
        self.missing = self._bitmap("\ue000")
        self.known: dict[str, bool] = {" ": True}

    def _bitmap(self, char: str) -> tuple[tuple[int, int], bytes]:
        mask = self.font.getmask(char)
        return mask.size, bytes(mask)

    def has(self, char: str) -> bool:
        found = self.known.get(char)
        if found is None:
            size, bits = self._bitmap(char)
            found = size[0] > 0 and size[1] > 0 and any(bits) and (size, bits) != self.missing
            self.known[char] = found
        return found

    def covers(self, text: str) -> bool:
        return all(self.has(char) for char in text)


def available_fonts(paths: list[Path] | None) -> list[Font]:
    """The fonts given (known by file name when they are copies of FONTS', e.g. carried to the GPU machine), else FONTS' installed ones."""
    if paths:
        by_name = {Path(p).name: known for p, known in FONTS.items()}
        return [Font(p, *by_name.get(p.name, ("given", "see the font's own licence"))) for p in paths]
    return [Font(Path(p), package, licence) for p, (package, licence) in FONTS.items() if Path(p).exists()]


def render_line(text: str, font_path: Path, g: np.random.Generator) -> Image.Image:
    """`text` in the font, 64 px high, dark ink on white; size, gaps, ink, weight and slant drawn from `g`."""
    size = int(RENDER_SIZE * g.uniform(0.85, 1.15))
    font = ImageFont.truetype(str(font_path), size)
    ascent, descent = font.getmetrics()
    words = text.split(" ")
    space = font.getlength(" ")
    stroke = int(g.integers(0, 2)) if size > 60 else 0
    ink = int(g.integers(0, 90))
    gaps = [space * g.uniform(0.6, 1.8) for _ in words[1:]]
    width = int(sum(font.getlength(w) for w in words) + sum(gaps) + 4 * size)
    height = ascent + descent + 2 * size
    canvas = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(canvas)
    x = 2.0 * size
    baseline_y = size + ascent
    for i, word in enumerate(words):
        # each word sits a little off the line, as a hand drifts
        draw.text((x, baseline_y + g.normal(0, 0.03) * size), word, font=font, fill=ink, anchor="ls", stroke_width=stroke, stroke_fill=ink)
        x += font.getlength(word) + (gaps[i] if i < len(gaps) else 0)
    shear = g.uniform(-0.25, 0.3)  # slant: positive leans right
    canvas = canvas.transform(canvas.size, Image.AFFINE, (1, shear, -shear * baseline_y, 0, 1, 0), resample=Image.BILINEAR, fillcolor=255)
    ink_mask = np.asarray(canvas) < 200
    ys, xs = np.nonzero(ink_mask)
    if len(xs) == 0:
        raise ValueError(f"nothing drawn for {text!r}")
    # a line box with margins like the dataset's: the ink plus a bit, more above (ascenders of the line below are absent)
    top = max(0, min(ys.min(), baseline_y - ascent) - int(g.uniform(0.05, 0.2) * size))
    bottom = min(height, max(ys.max() + 1, baseline_y + descent // 2) + int(g.uniform(0.05, 0.2) * size))
    left = max(0, xs.min() - int(g.uniform(0.05, 0.3) * size))
    right = min(width, xs.max() + 1 + int(g.uniform(0.05, 0.3) * size))
    line = canvas.crop((left, top, right, bottom))
    scaled_width = max(8, round(line.width * SOURCE_HEIGHT / line.height))
    return line.resize((scaled_width, SOURCE_HEIGHT), Image.LANCZOS)


def read_training_texts(dataset: Path) -> list[dict[str, str]]:
    with open(dataset / "train.tsv", encoding="utf-8", newline="") as f:
        return [row for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if row["text_norm"].strip()]


class _Renderer:
    """Renders the line of one index (or None when no font draws its text); a line is a function of its index, so
    workers can render any indices in any order."""

    def __init__(self, dataset: Path, seed: int, font_paths: list[Path] | None):
        self.fonts = available_fonts(font_paths)
        if not self.fonts:
            raise SystemExit("no handwriting font found: apt-get install " + " ".join(sorted({p for p, _ in FONTS.values()})) + " (or give --fonts)")
        self.coverage = [Coverage(ImageFont.truetype(str(f.path), RENDER_SIZE)) for f in self.fonts]
        self.rows = read_training_texts(dataset)
        self.seed = seed

    def __call__(self, index: int) -> tuple[bytes, str, Font, dict[str, str]] | None:
        g = np.random.default_rng([self.seed, index])
        row = self.rows[int(g.integers(len(self.rows)))]
        source = row["text_norm"].strip()
        fonts = self.fonts
        usable = [k for k in range(len(fonts)) if self.coverage[k].covers(fonts[k].text_for(source))]
        if not usable:
            return None
        # a package first, then one of its fonts: bwht's six do not outweigh the rest
        packages = sorted({fonts[k].package for k in usable})
        package = packages[int(g.integers(len(packages)))]
        members = [k for k in usable if fonts[k].package == package]
        font = fonts[members[int(g.integers(len(members)))]]
        text = font.text_for(source)
        buffer = io.BytesIO()
        render_line(text, font.path, g).save(buffer, format="JPEG", quality=90)
        return buffer.getvalue(), text, font, row


_worker_renderer: _Renderer | None = None


def _init_worker(dataset: Path, seed: int, font_paths: list[Path] | None) -> None:
    global _worker_renderer
    _worker_renderer = _Renderer(dataset, seed, font_paths)


def _render_in_worker(index: int):
    return _worker_renderer(index)


def _rendered(renderer_args: tuple, indices: range, workers: int):
    """(index order) the rendering of each index, in this process or in `workers` processes."""
    if workers <= 1:
        renderer = _Renderer(*renderer_args)
        yield from (renderer(i) for i in indices)
        return
    with multiprocessing.get_context("fork").Pool(workers, initializer=_init_worker, initargs=renderer_args) as pool:
        yield from pool.imap(_render_in_worker, indices, chunksize=64)


def synthesise(dataset: Path, out: Path, count: int, seed: int, font_paths: list[Path] | None = None, workers: int = 1) -> dict[str, int]:
    """Renders `count` lines into `out` (train shards and train.tsv); returns the number of lines per font file name.
    The folder is the same whatever the number of worker processes."""
    per_font: dict[str, int] = {}
    with LineShardWriter(out, "synth") as shards:
        for rendered in _rendered((dataset, seed, font_paths), range(count * 4), workers):
            if shards.count == count:
                break
            if rendered is None:
                continue
            data, text, font, row = rendered
            shards.add(data, [text, text, "synthetic (train/synth_lines.py)", font.path.name, font.licence, f"synth:{font.path.stem}", row["lang"], "Synthetic", row["file"]])
            per_font[font.path.name] = per_font.get(font.path.name, 0) + 1
    return per_font


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines", help="whose training texts to render")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--lines", type=int, default=20000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--fonts", type=Path, nargs="*", help="font files instead of the Debian packages' (FONTS)")
    p.add_argument("--workers", type=int, default=1, help="rendering processes (the folder is the same for any number)")
    args = p.parse_args(argv)
    per_font = synthesise(args.dataset, args.out, args.lines, args.seed, args.fonts, args.workers)
    print(f"{sum(per_font.values())} lines in {args.out}:", dict(sorted(per_font.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
