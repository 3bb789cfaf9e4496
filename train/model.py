"""Fully convolutional line recognizer: 2-D convolutional encoder, then a stack of residual dilated 1-D
convolutions along the line, per-frame class scores for CTC.

A BiLSTM head was measured first and dropped: on this CPU build of PyTorch a 2x128 BiLSTM step took
2.3 s per batch against 0.06 s for a 4-layer 1-D convolution stack of the same width (see
docs/training.md); convolutions are also fast in onnxruntime.

Input (N, 1, H, W) normalised grey levels, H fixed (the model height), W any width >= the width stride.
Output (N, T, C) log-probabilities with T = W // width_stride (2 or 4; pooling halves the width once or
twice) and C = len(charset) + 1, class 0 being the CTC blank.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class ModelConfig:
    num_classes: int
    height: int = 32
    channels: tuple[int, ...] = (16, 48, 96, 96, 128)
    hidden: int = 256
    temporal_layers: int = 6
    kernel: int = 5
    dropout: float = 0.2
    # pixels of the (model-height) line per output frame. v1 used 4: handwriting averages 8.7 px per
    # character at height 32, so 4 gave ~2.2 frames per character, tight for CTC (a repeated letter
    # needs a blank between); 2 gives ~4.4.
    width_stride: int = 4
    # optional bidirectional LSTM layers after the convolutional stack (0: none, as v1 and v2). Too slow to
    # train on this project's CPUs (docs/training.md), the standard stronger head where a GPU is available.
    recurrent_layers: int = 0
    # LSTM units per direction (0: hidden // 2, the LSTM's output then added to its input). Another size
    # feeds the 2 x recurrent_hidden outputs straight to the classifier.
    recurrent_hidden: int = 0

    @property
    def recurrent_units(self) -> int:
        """LSTM units per direction."""
        return self.recurrent_hidden or self.hidden // 2

    @property
    def recurrent_residual(self) -> bool:
        """Whether the LSTM's output is added to the convolutional features (2 x units = hidden)."""
        return self.recurrent_layers > 0 and 2 * self.recurrent_units == self.hidden

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "ModelConfig":
        d = dict(d)
        d["channels"] = tuple(d["channels"])
        return ModelConfig(**d)


def pools(width_stride: int) -> tuple[tuple[int, int], ...]:
    """Pooling after each conv block, (height, width) factors: the height is always divided by 16."""
    if width_stride == 4:
        return ((2, 2), (2, 2), (1, 1), (2, 1), (2, 1))
    if width_stride == 2:
        return ((2, 2), (2, 1), (1, 1), (2, 1), (2, 1))
    raise ValueError(f"width_stride must be 2 or 4, not {width_stride}")


def output_length(width: int, width_stride: int) -> int:
    return width // width_stride


class CRNN(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        layer_pools = pools(cfg.width_stride)
        if len(cfg.channels) != len(layer_pools):
            raise ValueError(f"channels must have {len(layer_pools)} entries")
        self.cfg = cfg
        blocks: list[nn.Module] = []
        in_ch = 1
        h = cfg.height
        for out_ch, pool in zip(cfg.channels, layer_pools):
            blocks += [nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=False), nn.BatchNorm2d(out_ch), nn.ReLU(inplace=True)]
            if pool != (1, 1):
                blocks.append(nn.MaxPool2d(pool, pool))
                h //= pool[0]
            in_ch = out_ch
        self.encoder = nn.Sequential(*blocks)
        self.feature_height = h
        features = in_ch * h
        self.project = nn.Sequential(nn.Conv1d(features, cfg.hidden, 1, bias=False), nn.BatchNorm1d(cfg.hidden), nn.ReLU(inplace=True))
        # dilations 1, 2, 4, 1, 2, 4 ... frames at stride 4 (doubled at stride 2, so that the taps sit at the same
        # pixel offsets): with kernel 5 and six layers each frame sees +-56 frames at stride 4 (~ 224 px at height 32)
        spread = 4 // cfg.width_stride
        self.temporal = nn.ModuleList(
            TemporalBlock(cfg.hidden, cfg.kernel, spread * 2 ** (i % 3), cfg.dropout) for i in range(cfg.temporal_layers)
        )
        units = cfg.recurrent_units
        self.recurrent = (
            nn.LSTM(cfg.hidden, units, num_layers=cfg.recurrent_layers, bidirectional=True, dropout=cfg.dropout if cfg.recurrent_layers > 1 else 0.0)
            if cfg.recurrent_layers
            else None
        )
        self.recurrent_residual = cfg.recurrent_residual
        self.dropout = nn.Dropout(cfg.dropout)
        self.classifier = nn.Conv1d(2 * units if self.recurrent is not None else cfg.hidden, cfg.num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.encoder(x)  # N, C, h, T
        n, c, h, t = f.shape
        f = self.project(f.reshape(n, c * h, t))  # N, hidden, T
        for block in self.temporal:
            f = block(f)
        if self.recurrent is not None:
            r, _ = self.recurrent(f.permute(2, 0, 1))  # T, N, 2 x units
            f = f + r.permute(1, 2, 0) if self.recurrent_residual else r.permute(1, 2, 0)
        logits = self.classifier(self.dropout(f))  # N, C, T
        return F.log_softmax(logits, dim=1).transpose(1, 2)  # N, T, C


class TemporalBlock(nn.Module):
    def __init__(self, width: int, kernel: int, dilation: int, dropout: float):
        super().__init__()
        self.conv = nn.Conv1d(width, width, kernel, padding=dilation * (kernel // 2), dilation=dilation, bias=False)
        self.norm = nn.BatchNorm1d(width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.dropout(F.relu(self.norm(self.conv(x))))


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
