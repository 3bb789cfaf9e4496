"""Make a compact copy of htr-lines for a GPU machine: lines at a lower height, re-encoded (WebP or JPEG), packed.

    python3 train/compact_data.py --dataset ../shared/datasets/htr-lines --out .cache-gpu/htr40 --height 40 --quality 60

The GPU machine sees only the working tree (at most 64 MiB carried per call), not ../shared. The copy
holds `train.pack` and `val.pack` (the images one after another), `train.tsv` and `val.tsv` (the dataset's
rows, less the columns no script reads, with `pack_offset`, `pack_length` and `pack_width`, the line's width at 64 px) and `compact.json`
(the digest of the source dataset, the height and quality). Every script that takes `--dataset` reads it
as it reads the original (train/data.py: `is_compact`): lines are scaled back to 64 px on decoding.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import tarfile
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from data import COMPACT_MARKER, SOURCE_HEIGHT, dataset_digest  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
KEPT_COLUMNS = ("file", "text_norm", "hand_or_document", "lang", "line_type")


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--height", type=int, default=48)
    p.add_argument("--quality", type=int, default=75)
    p.add_argument("--format", choices=("webp", "jpeg"), default="webp", help="WebP is about 30 %% smaller than JPEG at the same quality")
    args = p.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    digest = dataset_digest(args.dataset)
    total = 0
    for split in ("train", "val"):
        if not (args.dataset / f"{split}.tsv").exists():  # a train-only folder (real_lines.py, synth_lines.py)
            continue
        members: dict[str, bytes] = {}
        for shard in sorted(args.dataset.glob(f"{split}-*.tar")):
            with tarfile.open(shard) as tar:
                for m in tar.getmembers():
                    if m.isfile():
                        members[m.name] = tar.extractfile(m).read()
        with open(args.dataset / f"{split}.tsv", encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            # only the columns that training and evaluation read (the copy must stay small)
            fields = [k for k in (reader.fieldnames or []) if k in KEPT_COLUMNS] + ["pack_offset", "pack_length", "pack_width"]
            rows = list(reader)
        offset = 0
        with open(args.out / f"{split}.pack", "wb") as pack, open(args.out / f"{split}.tsv", "w", encoding="utf-8", newline="") as tsv:
            tsv.write("\t".join(fields) + "\n")  # as the source: no quoting (fields hold no tabs or newlines)
            for row in rows:
                with Image.open(io.BytesIO(members[row["file"]])) as im:
                    im = im.convert("L")
                    width, height = im.size
                    if height != SOURCE_HEIGHT:
                        raise ValueError(f"{row['file']}: height {height}, expected {SOURCE_HEIGHT}")
                    small = im.resize((max(1, round(width * args.height / SOURCE_HEIGHT)), args.height), Image.LANCZOS)
                buf = io.BytesIO()
                if args.format == "jpeg":
                    small.save(buf, format="JPEG", quality=args.quality, optimize=True)
                else:
                    small.save(buf, format="WEBP", quality=args.quality, method=4)
                blob = buf.getvalue()
                pack.write(blob)
                out = {**row, "pack_offset": offset, "pack_length": len(blob), "pack_width": width}
                tsv.write("\t".join(str(out[k]) for k in fields) + "\n")
                offset += len(blob)
        print(f"{split}: {len(rows)} lines, {offset / 2**20:.1f} MiB", flush=True)
        total += offset
    (args.out / COMPACT_MARKER).write_text(
        json.dumps({"dataset_digest": digest, "source": str(args.dataset), "height": args.height, "format": args.format, "quality": args.quality}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(f"total {total / 2**20:.1f} MiB in {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
