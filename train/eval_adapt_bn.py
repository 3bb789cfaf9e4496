"""Test-time adaptation of the batch norms to one document (AdaBN): does a new hand read better when the
recognizer's batch-norm statistics come (in part) from that hand's own lines?

    python3 train/eval_adapt_bn.py --checkpoint CKPT [--passes 4] [--blend 0.25,0.5,1]

For each validation document, the model's running statistics are recomputed on the document's own lines (no
labels used), augmented as in training (the model's statistics were always taken on augmented lines), over
--passes passes, then blended with the model's own statistics: running = (1 - m) * model + m * document. Greedy
CER/WER per source against the unadapted model, same run.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
from collections import defaultdict
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from average_checkpoints import update_batch_norms  # noqa: E402
from batches import make_batch  # noqa: E402
from data import ImageStore, ensure_extracted, read_split, width_batches  # noqa: E402
from eval_decoding import documents  # noqa: E402
from metrics import ErrorRate, greedy_decode  # noqa: E402
from model import CRNN, ModelConfig  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def norms(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def read(model: CRNN, lines, store, index, cfg, meta) -> list[str]:
    texts = [""] * len(lines)
    model.eval()
    with torch.no_grad():
        for ids in width_batches(lines, 40000, 32, seed=0):
            b = make_batch([lines[i] for i in ids], store, index, cfg.height, meta["mean"], meta["std"], None, cfg.width_stride)
            for i, text in zip(ids, greedy_decode(model(b.images), b.frames.tolist(), meta["charset"])):
                texts[i] = text
    return texts


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--cache", type=Path, default=Path("/work/cache/htr-lines"))
    p.add_argument("--passes", type=int, default=4)
    p.add_argument("--blend", default="0.25,0.5,1")
    p.add_argument("--clean", action="store_true", help="statistics from the document's lines without augmentation")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    blends = [float(b) for b in args.blend.split(",")]

    state = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
    cfg = ModelConfig.from_dict(state["model_config"])
    meta = state["meta"]
    model = CRNN(cfg)
    model.load_state_dict(state["model"])
    model.eval()
    images_dir, _ = ensure_extracted(args.dataset, args.cache)
    lines = read_split(args.dataset, "val", images_dir)
    store = ImageStore(images_dir, lines)
    index = {ch: i + 1 for i, ch in enumerate(meta["charset"])}
    document_of = documents(args.dataset / "val.tsv")
    by_document = defaultdict(list)
    for line in lines:
        by_document[document_of[line.file]].append(line)

    rates = defaultdict(lambda: defaultdict(ErrorRate))  # setting -> source -> rate
    for document, doc_lines in sorted(by_document.items()):
        source = doc_lines[0].source
        for text, line in zip(read(model, doc_lines, store, index, cfg, meta), doc_lines):
            rates["model"][source].add(text, line.text)
            rates["model"]["all"].add(text, line.text)
        # the images only: a text the charset lacks must not stop make_batch
        unlabelled = [dataclasses.replace(line, text="") for line in doc_lines]
        batches = []
        for k in range(args.passes):
            g = None
            if not args.clean:
                g = torch.Generator()
                g.manual_seed(1000 * k + 7)
            for ids in width_batches(unlabelled, 24000, 32, seed=k):
                batches.append(make_batch([unlabelled[i] for i in ids], store, index, cfg.height, meta["mean"], meta["std"], g, cfg.width_stride).images)
        adapted = copy.deepcopy(model)
        update_batch_norms(adapted, batches)
        for m in blends:
            blended = copy.deepcopy(model)
            for mine, theirs in zip(norms(blended), norms(adapted)):
                mine.running_mean.mul_(1 - m).add_(theirs.running_mean, alpha=m)
                mine.running_var.mul_(1 - m).add_(theirs.running_var, alpha=m)
            for text, line in zip(read(blended, doc_lines, store, index, cfg, meta), doc_lines):
                rates[f"blend {m}"][source].add(text, line.text)
                rates[f"blend {m}"]["all"].add(text, line.text)
        print(f"{document:40s} {len(doc_lines):4d} lines  model {100 * rates['model']['all'].cer:.2f}  " + "  ".join(f"{m}: {100 * rates[f'blend {m}']['all'].cer:.2f}" for m in blends), flush=True)

    sources = sorted({s for by_source in rates.values() for s in by_source})
    print("setting      " + "  ".join(f"{s:>14s}" for s in sources))
    for setting, by_source in rates.items():
        print(f"{setting:12s} " + "  ".join(f"{100 * by_source[s].cer:6.2f}/{100 * by_source[s].wer:6.2f}" for s in sources))


if __name__ == "__main__":
    main(sys.argv[1:])
