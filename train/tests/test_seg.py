"""The line segmenter's training code (train/seg_*.py) on a page drawn here (no ../shared): its target
maps lie where the page's lines are, a training example is a function of its seed and keeps image and
targets aligned, the network halves the input size, and the export passes onnx.checker with dynamic
sizes and matches PyTorch in onnxruntime-node (the service's runtime) where Node is there."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

import numpy as np
import onnx
import torch
from PIL import Image, ImageDraw

import support
from seg_augment import make_example
from seg_data import CHANNELS, render_page
from seg_export import check_in_onnxruntime, export
from seg_model import STRIDE, LineSegmenter, Probabilities, SegConfig
from seg_train import init_from, loss_of, normalise, pad_to_stride

WIDTH, HEIGHT = 800, 600
# three text lines: baseline y, from x to x
LINES = [(150, 100, 700), (300, 100, 650), (450, 150, 700)]


def drawn_page() -> tuple[dict, Image.Image]:
    """A grey page with three dark 'lines of writing' (bars from x-height to baseline) and their ground truth."""
    image = Image.new("L", (WIDTH, HEIGHT), 235)
    draw = ImageDraw.Draw(image)
    lines = []
    for i, (y, x0, x1) in enumerate(LINES):
        draw.rectangle([x0, y - 30, x1, y], fill=40)
        lines.append(
            {
                "id": f"l{i}",
                "region_id": "r0",
                "baseline": [[x0, y], [x1, y]],
                "polygon": [[x0, y - 60], [x1, y - 60], [x1, y + 25], [x0, y + 25]],
                "text": "x",
                "line_type": None,
            }
        )
    return {"page": "drawn_page_1", "width": WIDTH, "height": HEIGHT, "lines": lines}, image


class TargetsTest(unittest.TestCase):
    def test_maps_at_half_the_model_scale_hold_each_line_where_it_is(self):
        page, image = drawn_page()
        rendered = render_page(page, image, side=400)  # 800 -> 400 model pixels -> 200 map pixels
        self.assertEqual(rendered.image.shape, (300, 400))
        self.assertEqual(rendered.target.shape, (len(CHANNELS), 150, 200))
        baseline, region, boundary, ends = rendered.target
        for y, x0, x1 in LINES:
            row, left, right = y // 4, x0 // 4, x1 // 4
            self.assertTrue(baseline[row - 1 : row + 2, left + 2 : right - 2].any(axis=0).all(), f"baseline at y={y}")
            for x in (left, right):
                self.assertTrue(ends[row, x], f"a line end at ({x}, {row})")
            self.assertFalse(ends[row - 5 : row + 6, left + 5 : right - 5].any(), f"no line end inside the line at y={y}")
            self.assertTrue(region[row - 5, left + 5 : right - 5].all(), f"region above the baseline at y={y}")
            self.assertTrue(boundary[(y - 60) // 4 - 1 : (y - 60) // 4 + 2, (left + right) // 2].any(), f"boundary on the outline's top at y={y}")
        self.assertFalse(baseline[:30].any() or region[:15].any(), "nothing above the first line's outline")
        self.assertEqual(set(np.unique(rendered.target)), {0, 1})


class ExampleTest(unittest.TestCase):
    def test_an_example_is_a_function_of_its_seed(self):
        page = render_page(*drawn_page(), side=400)
        a = make_example(page, np.random.default_rng([11, 0, 0, 0]), 128)
        b = make_example(page, np.random.default_rng([11, 0, 0, 0]), 128)
        c = make_example(page, np.random.default_rng([11, 0, 0, 1]), 128)
        self.assertTrue(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]))
        self.assertFalse(torch.equal(a[0], c[0]))
        self.assertEqual(tuple(a[0].shape), (1, 128, 128))
        self.assertEqual(tuple(a[1].shape), (len(CHANNELS), 64, 64))
        self.assertTrue(0 <= float(a[0].min()) and float(a[0].max()) <= 1)

    def test_without_augmentation_the_targets_stay_on_the_writing(self):
        page = render_page(*drawn_page(), side=400)
        for seed in range(5):
            image, target = make_example(page, np.random.default_rng(seed), 256, augment=False)
            ink = image[0] < 0.5  # the dark bars, at model scale
            baseline = target[0] > 0.5
            if not baseline.any():
                continue
            # every baseline pixel sits at the bottom edge of a bar: ink just above it, in the model image
            ys, xs = torch.nonzero(baseline, as_tuple=True)
            above = ink[(2 * ys - 3).clamp(min=0), (2 * xs).clamp(max=255)]
            self.assertGreater(float(above.float().mean()), 0.8, f"seed {seed}")


class NetworkTest(unittest.TestCase):
    def test_maps_come_out_at_half_the_input_size_and_the_loss_trains(self):
        torch.manual_seed(0)
        model = LineSegmenter(SegConfig(channels=(4, 8, 8, 8), decoder=8))
        x = torch.rand(2, 1, 4 * STRIDE, 6 * STRIDE)
        out = model(normalise(x))
        self.assertEqual(tuple(out.shape), (2, len(CHANNELS), 2 * STRIDE, 3 * STRIDE))
        loss = loss_of(out, torch.zeros_like(out))
        loss.backward()
        self.assertTrue(torch.isfinite(loss) and loss > 0)
        self.assertEqual(tuple(pad_to_stride(torch.rand(1, 1, 33, 50)).shape), (1, 1, 48, 64))


class InitialiseTest(unittest.TestCase):
    def test_a_checkpoint_with_fewer_outputs_fills_the_first_channels_of_the_head(self):
        torch.manual_seed(2)
        small = LineSegmenter(SegConfig(channels=(4, 8, 8, 8), decoder=8, outputs=3))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "three.pt"
            torch.save({"model": small.state_dict()}, path)
            model = LineSegmenter(SegConfig(channels=(4, 8, 8, 8), decoder=8, outputs=4))
            fresh = model.head.weight[3].detach().clone()
            init_from(model, path)
        self.assertTrue(torch.equal(model.head.weight[:3], small.head.weight))
        self.assertTrue(torch.equal(model.head.weight[3], fresh), "the new channel keeps its own initial weights")
        self.assertTrue(torch.equal(model.e4[0][0].weight, small.e4[0][0].weight))


class ExportTest(unittest.TestCase):
    def test_export_has_dynamic_sizes_and_matches_pytorch_in_onnxruntime_node(self):
        torch.manual_seed(1)
        model = LineSegmenter(SegConfig(channels=(4, 8, 8, 8), decoder=8))
        page = render_page(*drawn_page(), side=400)
        model.train()
        with torch.no_grad():  # batch-norm statistics from the page, then eval mode
            model(normalise(pad_to_stride(torch.from_numpy(page.image.copy()).float().div(255)[None, None])))
        wrapped = Probabilities(model.eval()).eval()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "seg.onnx"
            export(wrapped, path)
            graph = onnx.load(str(path)).graph
            dims = [d.dim_param or d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
            self.assertEqual(dims, [1, 1, "height", "width"])
            if support.node() is None:
                self.skipTest("no Node with the project's onnxruntime-node to compare in")
            image = normalise(pad_to_stride(torch.from_numpy(page.image.copy()).float().div(255)[None, None]))
            worst = check_in_onnxruntime(wrapped, path, [image, image[:, :, :160, :]])
            self.assertLess(worst, 1e-4)


if __name__ == "__main__":
    unittest.main()
