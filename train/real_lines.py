"""More real hands (issue 12, item 2): line images from other public ground-truth repositories, cut
as ../shared/datasets/htr-lines cut its lines, for `train.py --extra-train`.

    /usr/bin/python3 train/real_lines.py --mirrors /work/.mirror --out /work/cache/real-lines --sources mss18 timeus doniau

Reads each source's bare git mirror (the `fetch` tool's snapshot: /work/.mirror/<owner>+<name>/repo)
at HEAD and writes one folder shaped like htr-lines with a train split only (`line_shards.py`): the
commit, licence and document of every line are in its TSV row. Nothing here is a validation or
evaluation document: the sources are repositories that htr-lines, htr-pages and the fixture pages do
not draw from (checked by name and by image digest against htr-pages in `--check-pages`).

The cut is htr-lines' own ("How lines were cropped" in its README): ALTO `TextLine` text from its
`String@CONTENT`s with `SP` and `HYP`, geometry from `Shape/Polygon` (else the box); crop = the
polygon's bounding box with a vertical margin of 10 % of the line height (at least 2 px) and half that
sideways; outside the polygon, grown by the margin, set to white (eScriptorium sources); grey, Lanczos
to 64 px high (wider than 2048: scaled to 2048 wide, padded to 64 high); JPEG quality 90. Skipped:
empty text, boxes under 8 px, near-vertical lines (narrower than high with 4 characters or more),
pages whose image the mirror lacks; and, unlike htr-lines, lines under 7 px a character at 64 px high
(a box holding more than its line: htr-lines has 0.5 % of its lines below 7.5). `text_norm` is the evaluation's normalisation (bench/lib/
text-metrics.ts, `normaliseText`), after the source's own conventions are read (SOURCES).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import SOURCE_HEIGHT  # noqa: E402
from line_shards import LineShardWriter  # noqa: E402

MAX_WIDTH = 2048
JPEG_QUALITY = 90
# Below this many pixels a character at 64 px high, the box holds more than its line (a polygon drawn
# around two lines, or an interlinear addition squeezed into one): htr-lines' 0.5th percentile is 7.5.
MIN_WIDTH_PER_CHARACTER = 7
ALTO_NAMESPACES = ("http://www.loc.gov/standards/alto/ns-v4#", "http://www.loc.gov/standards/alto/ns-v3#")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".tif", ".tiff")


@dataclass(frozen=True)
class Source:
    repo: str
    licence: str
    lang: str
    alto: str  # glob of the ALTO files, from the repository root
    document_depth: int  # path components (from the root) naming a document: the unit a hand belongs to
    # the source's own markup, rewritten to what is on the page before the evaluation's normalisation
    rewrites: tuple[tuple[str, str], ...] = field(default_factory=tuple)


SOURCES: dict[str, Source] = {
    # 18th-century French manuscripts (Voltaire, Rousseau, Diderot, police gazettes, letters): ten hands and more
    "mss18": Source(
        "HTR-United/CREMMA-MSS-18",
        "CC-BY 4.0 (LICENSE)",
        "fr",
        "data/*/*.xml",
        2,
        # `< … >` is struck text, still written on the page (as Copiste's `>…<`)
        ((r"<\s*([^<>]*?)\s*>", r"\1"),),
    ),
    # registers of the Paris textile industry's labour court, 1858 and 1878: its clerks' hands
    "timeus": Source("HTR-United/timeuscorpus", "CC-BY 4.0 (LICENSE)", "fr", "data/*/alto/*.xml", 2),
    # a diary of 1914-15 (Archives de la Somme), one hand
    "doniau": Source("alix-tz/dataset-celestine-doniau-danest", "CC-BY 4.0 (README)", "fr", "data/*.xml", 1),
}


def normalise_text(text: str) -> str:
    """bench/lib/text-metrics.ts `normaliseText`: the `text_norm` column of htr-lines."""
    text = unicodedata.normalize("NFC", text)
    text = re.sub(r"<>|><", " ", text)
    text = re.sub(r">([^<>]*)<", r"\1", text)
    text = re.sub(r"[⟦⟧^]", "", text)
    text = re.sub(r"[’‘ʼ]", "'", text)
    text = re.sub(r"[«»“”„]", '"', text)
    text = re.sub(r"[—–]", "-", text)
    text = re.sub(r"-{2,}", "-", text)
    text = text.replace("ſ", "s").replace("ꝛ", "r")
    text = re.sub(r"([aouAOU])\u0364", "\\1\u0308", text)
    text = unicodedata.normalize("NFC", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" ([!?:;,.)\]])", r"\1", text)
    return re.sub(r"([(\[]) ", r"\1", text)


class GitTree:
    """The files of a bare repository at one commit; a blob the snapshot lacks reads as None."""

    def __init__(self, git_dir: Path, rev: str = "HEAD"):
        self.git_dir = git_dir
        self.commit = self._git("rev-parse", rev).decode().strip()
        listing = self._git("ls-tree", "-r", "-z", self.commit).split(b"\0")
        self.blobs = {}
        for entry in filter(None, listing):
            meta, path = entry.split(b"\t", 1)
            self.blobs[path.decode()] = meta.split()[2].decode()

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "-C", str(self.git_dir), *args], check=True, capture_output=True).stdout

    def paths(self, pattern: str) -> list[str]:
        return sorted(p for p in self.blobs if PurePosixPath(p).match(pattern) and len(PurePosixPath(p).parts) == len(PurePosixPath(pattern).parts))

    def read(self, path: str) -> bytes | None:
        done = subprocess.run(["git", "-C", str(self.git_dir), "cat-file", "blob", self.blobs[path]], capture_output=True)
        return done.stdout if done.returncode == 0 else None


@dataclass
class AltoLine:
    id: str
    text: str
    polygon: list[tuple[float, float]]
    line_type: str


def alto_lines(xml: bytes) -> tuple[str, tuple[int, int] | None, list[AltoLine]] | None:
    """(image file name, declared page size, lines) of an ALTO v3/v4 file; None for another XML (a METS file)."""
    root = ET.fromstring(xml)
    ns = next((n for n in ALTO_NAMESPACES if root.tag == f"{{{n}}}alto"), None)
    if ns is None:
        return None
    q = lambda tag: f"{{{ns}}}{tag}"  # noqa: E731
    file_name = (root.findtext(f"{q('Description')}/{q('sourceImageInformation')}/{q('fileName')}") or "").strip()
    page = root.find(f".//{q('Page')}")
    size = (int(float(page.get("WIDTH"))), int(float(page.get("HEIGHT")))) if page is not None and page.get("WIDTH") else None
    labels = {tag.get("ID"): tag.get("LABEL", "") for tag in root.iter(q("OtherTag"))}
    lines = []
    for line in root.iter(q("TextLine")):
        parts = []
        for child in line:
            if child.tag == q("String"):
                parts.append(child.get("CONTENT", ""))
            elif child.tag == q("SP"):
                parts.append(" ")
            elif child.tag == q("HYP"):
                parts.append(child.get("CONTENT", "-"))
        shape = line.find(f"{q('Shape')}/{q('Polygon')}")
        if shape is not None and shape.get("POINTS", "").strip():
            numbers = [float(v) for v in re.split(r"[\s,]+", shape.get("POINTS").strip())]
            polygon = list(zip(numbers[0::2], numbers[1::2]))
        else:
            x, y, w, h = (float(line.get(k, 0)) for k in ("HPOS", "VPOS", "WIDTH", "HEIGHT"))
            polygon = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
        line_type = " ".join(labels.get(ref, "") for ref in (line.get("TAGREFS") or "").split()).strip()
        lines.append(AltoLine(line.get("ID", ""), unicodedata.normalize("NFC", "".join(parts)).replace("\t", " "), polygon, line_type))
    return file_name, size, lines


def cut_line(page: Image.Image, polygon: list[tuple[float, float]]) -> Image.Image | None:
    """The line as htr-lines cut it, SOURCE_HEIGHT px high; None for a degenerate box."""
    xs, ys = [p[0] for p in polygon], [p[1] for p in polygon]
    left, top, right, bottom = min(xs), min(ys), max(xs), max(ys)
    if right - left < 8 or bottom - top < 8:
        return None
    margin_y = max(2, round(0.1 * (bottom - top)))
    margin_x = max(1, round(margin_y / 2))
    box = (max(0, int(left) - margin_x), max(0, int(top) - margin_y), min(page.width, int(right) + margin_x + 1), min(page.height, int(bottom) + margin_y + 1))
    crop = page.crop(box)
    mask = Image.new("L", crop.size, 0)
    draw = ImageDraw.Draw(mask)
    shifted = [(x - box[0], y - box[1]) for x, y in polygon]
    draw.polygon(shifted, fill=255)
    # grown by the margin: the outline drawn 2 x margin wide, round joints
    draw.line(shifted + shifted[:1], fill=255, width=2 * margin_y, joint="curve")
    crop = Image.composite(crop, Image.new("L", crop.size, 255), mask)
    width = max(1, round(crop.width * SOURCE_HEIGHT / crop.height))
    if width <= MAX_WIDTH:
        return crop.resize((width, SOURCE_HEIGHT), Image.LANCZOS)
    height = max(1, round(crop.height * MAX_WIDTH / crop.width))
    line = Image.new("L", (MAX_WIDTH, SOURCE_HEIGHT), 255)
    line.paste(crop.resize((MAX_WIDTH, height), Image.LANCZOS), (0, (SOURCE_HEIGHT - height) // 2))
    return line


def find_image(tree: GitTree, alto_path: str, file_name: str) -> str | None:
    """The page image beside the ALTO file or one folder up (eScriptorium exports both ways)."""
    folder = PurePosixPath(alto_path).parent
    candidates = [folder / file_name, folder.parent / file_name] if file_name else []
    stem = PurePosixPath(alto_path).stem
    candidates += [base / f"{stem}{suffix}" for base in (folder, folder.parent) for suffix in IMAGE_SUFFIXES]
    return next((str(c) for c in candidates if str(c) in tree.blobs), None)


def mirror(mirrors: Path, source: Source) -> GitTree:
    return GitTree(mirrors / source.repo.replace("/", "+") / "repo")


@dataclass
class SourcePage:
    alto_path: str
    declared: tuple[int, int] | None  # the page size the ALTO file declares
    lines: list[AltoLine]
    image_path: str
    image: bytes


def source_pages(tree: GitTree, source: Source, bump) -> Iterator[SourcePage]:
    """The source's ALTO pages with their images; `bump(reason)` for each file passed over."""
    for alto_path in tree.paths(source.alto):
        xml = tree.read(alto_path)
        if xml is None:
            bump("ALTO missing from the mirror")
            continue
        alto = alto_lines(xml)
        if alto is None:
            bump("not ALTO, skipped")
            continue
        file_name, declared, lines = alto
        image_path = find_image(tree, alto_path, file_name)
        image = tree.read(image_path) if image_path else None
        if image is None:
            bump("page image missing from the mirror")
            continue
        yield SourcePage(alto_path, declared, lines, image_path, image)


def extract(mirrors: Path, sources: dict[str, Source], out: Path) -> dict[str, dict[str, int]]:
    """Cuts the lines of every source into one folder; returns what was kept and skipped, per source."""
    counts: dict[str, dict[str, int]] = {}
    with LineShardWriter(out, "real") as shards:
        for name, source in sources.items():
            tree = mirror(mirrors, source)
            seen = counts.setdefault(name, {})
            bump = lambda key: seen.__setitem__(key, seen.get(key, 0) + 1)  # noqa: E731
            for source_page in source_pages(tree, source, bump):
                alto_path, declared, lines = source_page.alto_path, source_page.declared, source_page.lines
                page = Image.open(io.BytesIO(source_page.image))
                page.load()
                page = page.convert("L")
                scale = (page.width / declared[0], page.height / declared[1]) if declared else (1.0, 1.0)
                document = f"{name}:" + "/".join(PurePosixPath(alto_path).parts[: source.document_depth])
                bump("pages")
                for line in lines:
                    text = line.text
                    for pattern, replacement in source.rewrites:
                        text = re.sub(pattern, replacement, text)
                    norm = normalise_text(text)
                    if not norm:
                        bump("empty line skipped")
                        continue
                    polygon = [(x * scale[0], y * scale[1]) for x, y in line.polygon]
                    xs, ys = [p[0] for p in polygon], [p[1] for p in polygon]
                    if max(xs) - min(xs) < max(ys) - min(ys) and len(norm) >= 4:
                        bump("line vertical/rotated skipped")
                        continue
                    cut = cut_line(page, polygon)
                    if cut is None:
                        bump("line degenerate skipped")
                        continue
                    if len(norm) >= 4 and cut.width < MIN_WIDTH_PER_CHARACTER * len(norm):
                        bump("line narrower than its text skipped")
                        continue
                    buffer = io.BytesIO()
                    cut.save(buffer, "JPEG", quality=JPEG_QUALITY)
                    shards.add(buffer.getvalue(), [text, norm, f"{source.repo}@{tree.commit}", alto_path, source.licence, document, source.lang, line.line_type, line.id])
                    bump("lines")
    return counts


def page_digests(pages_dir: Path) -> set[str]:
    """SHA-256 of the original images of htr-pages (its `source_image_sha256`), to prove none is cut here."""
    digests = set()
    for shard in sorted(pages_dir.glob("*.tar")):
        with tarfile.open(shard) as tar:
            for member in tar.getmembers():
                if member.name.endswith(".json"):
                    digests.add(json.load(tar.extractfile(member))["source_image_sha256"])
    return digests


def check_against_pages(mirrors: Path, sources: dict[str, Source], pages_dir: Path) -> int:
    """Count of the sources' page images that are also htr-pages images (train or val): must be 0."""
    known = page_digests(pages_dir)
    shared = 0
    for source in sources.values():
        for page in source_pages(mirror(mirrors, source), source, lambda _reason: None):
            if hashlib.sha256(page.image).hexdigest() in known:
                print(f"shared with htr-pages: {source.repo} {page.image_path}", file=sys.stderr)
                shared += 1
    return shared


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="folder of <owner>+<name>/repo bare mirrors")
    p.add_argument("--sources", nargs="+", choices=sorted(SOURCES), default=sorted(SOURCES))
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--check-pages", type=Path, help="htr-pages folder: fail if any page image is one of its pages")
    args = p.parse_args(argv)
    sources = {name: SOURCES[name] for name in args.sources}
    if args.check_pages is not None:
        shared = check_against_pages(args.mirrors, sources, args.check_pages)
        print(f"page images shared with {args.check_pages}: {shared}")
        if shared:
            raise SystemExit(1)
    for name, seen in extract(args.mirrors, sources, args.out).items():
        print(f"{name}: " + ", ".join(f"{key} {value}" for key, value in sorted(seen.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
