"""The line segmenter: a small fully-convolutional network, greyscale page in, four maps out at half resolution.

Encoder of four stride-2 stages (1/2 .. 1/16) with dilated convolutions at 1/16 so that one output pixel
sees several lines and a long stretch of its own line; an additive (FPN-style) decoder back to 1/2.
Outputs logits for baseline, line region, line boundary and line ends (seg_data.CHANNELS); the exported model
ends in a sigmoid.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# Input sides must be a multiple of this (four stride-2 stages).
STRIDE = 16


@dataclass
class SegConfig:
    channels: tuple[int, int, int, int] = (16, 32, 64, 96)
    decoder: int = 24
    outputs: int = 4

    @staticmethod
    def from_dict(d: dict) -> "SegConfig":
        return SegConfig(channels=tuple(d["channels"]), decoder=d["decoder"], outputs=d["outputs"])

    def to_dict(self) -> dict:
        return asdict(self)


def conv(cin: int, cout: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class LineSegmenter(nn.Module):
    def __init__(self, cfg: SegConfig):
        super().__init__()
        self.cfg = cfg
        c1, c2, c3, c4 = cfg.channels
        d = cfg.decoder
        self.e1 = nn.Sequential(conv(1, c1, 2), conv(c1, c1))
        self.e2 = nn.Sequential(conv(c1, c2, 2), conv(c2, c2))
        self.e3 = nn.Sequential(conv(c2, c3, 2), conv(c3, c3))
        self.e4 = nn.Sequential(conv(c3, c4, 2), conv(c4, c4, dilation=2), conv(c4, c4, dilation=4), conv(c4, c4, dilation=8))
        self.l1, self.l2, self.l3, self.l4 = (nn.Conv2d(c, d, 1) for c in (c1, c2, c3, c4))
        self.refine = conv(d, 16)
        self.head = nn.Conv2d(16, cfg.outputs, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.e1(x)
        x2 = self.e2(x1)
        x3 = self.e3(x2)
        x4 = self.e4(x3)
        up = lambda t, like: F.interpolate(t, size=like.shape[2:], mode="bilinear", align_corners=False)  # noqa: E731
        p = self.l4(x4)
        p = self.l3(x3) + up(p, x3)
        p = self.l2(x2) + up(p, x2)
        p = self.l1(x1) + up(p, x1)
        return self.head(self.refine(F.relu(p)))


class Probabilities(nn.Module):
    """What is exported: the maps as probabilities."""

    def __init__(self, model: LineSegmenter):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.model(x))


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
