"""Writes a folder of training lines shaped like ../shared/datasets/htr-lines (train split only):
`train-NNN.tar` shards of JPEG lines at the dataset's height and `train.tsv` with its columns, so that
train.py reads it with the same code (`--extra-train`). Used by synth_lines.py and real_lines.py."""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

COLUMNS = ["file", "text", "text_norm", "source_repo", "source_page", "licence", "hand_or_document", "lang", "line_type", "source_line_id"]
SHARD_BYTES = 32_000_000


class LineShardWriter:
    """`add(jpeg, row)` stores the image as `<prefix>-<shard>/<index>.jpg` and writes its TSV row (COLUMNS
    but `file`). Use as a context manager; any earlier shards in the folder are removed first."""

    def __init__(self, out: Path, prefix: str):
        self.out, self.prefix = out, prefix
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("train-*.tar"):
            old.unlink()
        self.tsv = open(out / "train.tsv", "w", encoding="utf-8", newline="")
        self.writer = csv.writer(self.tsv, delimiter="\t", quoting=csv.QUOTE_NONE, quotechar=None, lineterminator="\n")
        self.writer.writerow(COLUMNS)
        self.shard: tarfile.TarFile | None = None
        self.shard_bytes, self.shard_index, self.count = 0, 0, 0

    def add(self, jpeg: bytes, row: list[str]) -> str:
        if len(row) != len(COLUMNS) - 1:
            raise ValueError(f"a row has {len(COLUMNS) - 1} fields after the file name, not {len(row)}")
        if any("\t" in field or "\n" in field for field in row):
            raise ValueError(f"a field holds a tab or a newline: {row!r}")
        if self.shard is None or self.shard_bytes + len(jpeg) > SHARD_BYTES:
            if self.shard is not None:
                self.shard.close()
            self.shard = tarfile.open(self.out / f"train-{self.shard_index:03d}.tar", "w", format=tarfile.USTAR_FORMAT)
            self.shard_index, self.shard_bytes = self.shard_index + 1, 0
        name = f"{self.prefix}-{self.shard_index - 1:03d}/{self.count:06d}.jpg"
        info = tarfile.TarInfo(name)
        info.size = len(jpeg)
        self.shard.addfile(info, io.BytesIO(jpeg))
        self.shard_bytes += len(jpeg) + 1024
        self.writer.writerow([name, *row])
        self.count += 1
        return name

    def close(self) -> None:
        if self.shard is not None:
            self.shard.close()
            self.shard = None
        self.tsv.close()

    def __enter__(self) -> "LineShardWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
