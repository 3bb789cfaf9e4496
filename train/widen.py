"""A trained recognizer's BiLSTM head made wider without changing what it computes (Net2Net's idea, with zeros).

Each LSTM layer keeps its units and gets new ones. Every weight *into* a new unit (from the layer's input and from
the recurrent state) starts small and random, so the new units are alive from the first step; every weight *out of*
a new unit (the old units' recurrent weights from it, the next layer's input weights from it, the classifier's
weights from it) starts at zero. The old units then see exactly what they saw before, and the classifier reads
exactly what it read: the wider model's output is the narrower one's (in train mode too, but for dropout's random
masks: the LSTM has no batch norm). The first step's gradient reaches the zero outgoing weights (the new units'
outputs are not zero), and from the second step on the new units' own weights learn too.

Only the non-residual head is widened (the LSTM's 2 x units outputs go straight to the classifier, as in v3): where
the LSTM's output is added to the convolutional features, a wider LSTM would no longer fit that sum.

train.py --init-from widens a checkpoint when --recurrent-hidden asks for more units. As a command, it writes a widened
copy of a checkpoint, e.g. the shipped model (rebuilt by checkpoint_from_onnx.py) for a mean with a wider run's best
(average_checkpoints.py takes checkpoints of one shape):

    python3 train/widen.py --checkpoint V3.pt --units 256 --out V3-256.pt
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

from model import ModelConfig

GATES = 4  # PyTorch's LSTM stacks the input, forget, cell and output gates' rows in this order


def widen_recurrent_head(state: dict[str, torch.Tensor], old: ModelConfig, units: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """`state` (a CRNN's state_dict with config `old`) with each BiLSTM direction widened to `units` units."""
    before = old.recurrent_units
    if old.recurrent_layers == 0:
        raise ValueError("the checkpoint has no LSTM head to widen")
    if units < before:
        raise ValueError(f"cannot narrow the LSTM head from {before} to {units} units")
    if old.recurrent_residual or 2 * units == old.hidden:
        raise ValueError("only a non-residual LSTM head can be widened (its 2 x units outputs go straight to the classifier)")
    bound = 1 / math.sqrt(units)  # PyTorch's own initialisation of an LSTM of this size

    def fresh(*shape: int) -> torch.Tensor:
        return (torch.rand(*shape, generator=generator) * 2 - 1) * bound

    def old_unit_rows() -> torch.Tensor:
        """Row indices, in the wider layer's gate-stacked rows, of the old units."""
        return torch.cat([torch.arange(before) + gate * units for gate in range(GATES)])

    def bidirectional_columns() -> torch.Tensor:
        """Column indices, in an input of 2 x units (forward then backward outputs), of the old 2 x before outputs."""
        return torch.cat([torch.arange(before), torch.arange(before) + units])

    widened = dict(state)
    rows = old_unit_rows()
    for layer in range(old.recurrent_layers):
        for suffix in ("", "_reverse"):
            name = f"recurrent.{{}}_l{layer}{suffix}"
            weight_ih, weight_hh = state[name.format("weight_ih")], state[name.format("weight_hh")]
            inputs = weight_ih.shape[1] if layer == 0 else 2 * units
            new_ih = fresh(GATES * units, inputs).to(weight_ih.dtype)
            new_hh = fresh(GATES * units, units).to(weight_hh.dtype)
            # the old units' rows: their old weights, and zero from every new input or new unit (the first layer's
            # input, the convolutional features, does not grow)
            if layer == 0:
                new_ih[rows] = weight_ih
            else:
                new_ih[rows] = 0
                new_ih[rows.unsqueeze(1), bidirectional_columns().unsqueeze(0)] = weight_ih
            new_hh[rows] = 0
            new_hh[rows.unsqueeze(1), torch.arange(before).unsqueeze(0)] = weight_hh
            widened[name.format("weight_ih")] = new_ih
            widened[name.format("weight_hh")] = new_hh
            for bias in ("bias_ih", "bias_hh"):
                old_bias = state[name.format(bias)]
                new_bias = fresh(GATES * units).to(old_bias.dtype)
                new_bias[rows] = old_bias
                widened[name.format(bias)] = new_bias
    classifier = state["classifier.weight"]  # classes, 2 x before, 1
    new_classifier = torch.zeros(classifier.shape[0], 2 * units, classifier.shape[2], dtype=classifier.dtype)
    new_classifier[:, bidirectional_columns()] = classifier
    widened["classifier.weight"] = new_classifier
    return widened


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--units", type=int, required=True, help="LSTM units a direction of the copy")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=7, help="the new units' incoming weights (train.py uses its --seed)")
    args = p.parse_args(argv)
    state = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
    old = ModelConfig.from_dict(state["model_config"])
    try:
        weights = widen_recurrent_head(state["model"], old, args.units, torch.Generator().manual_seed(args.seed))
    except ValueError as error:
        raise SystemExit(str(error)) from error
    state.pop("optimizer", None)
    state["model"] = weights
    state["model_config"] = {**state["model_config"], "recurrent_hidden": args.units}
    state["meta"] = {**state["meta"], "widened": {"from": str(args.checkpoint), "recurrent_units": [old.recurrent_units, args.units]}}
    torch.save(state, args.out)
    print(f"{args.out}: LSTM head widened from {old.recurrent_units} to {args.units} units a direction", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
