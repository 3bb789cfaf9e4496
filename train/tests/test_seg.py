"""The line segmenter's training code (train/seg_*.py) on a page drawn here (no ../shared): its target
maps lie where the page's lines are, a training example is a function of its seed and keeps image and
targets aligned, a bitonal version of the page keeps its writing black on white paper, the network
halves the input size, the export passes onnx.checker with dynamic sizes and matches PyTorch in
onnxruntime-node (the service's runtime) where Node is there, and an exported segmenter comes back
as a checkpoint that computes the same function."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

import numpy as np
import onnx
import torch
from PIL import Image, ImageDraw

import support
from seg_augment import make_example
from seg_checkpoint_from_onnx import conv_weights, rebuild
from seg_data import CHANNELS, bitonal_at_size, render_page
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


class BitonalTest(unittest.TestCase):
    def bitonal_page(self):
        page, image = drawn_page()
        strokes = Image.new("L", image.size, 235)  # writing as strokes 3 px wide: Sauvola hollows out solid bars
        draw = ImageDraw.Draw(strokes)
        for y, x0, x1 in LINES:
            for x in range(x0, x1, 12):
                draw.rectangle([x, y - 30, x + 2, y], fill=90)
        rendered = render_page(page, image, side=400)
        rendered.bitonal = [bitonal_at_size(strokes, 40, 0.2, (400, 300))]
        return rendered

    def test_the_writing_turns_black_and_the_grey_paper_white(self):
        bitonal = self.bitonal_page().bitonal[0]
        self.assertEqual(bitonal.shape, (300, 400))
        for y, x0, x1 in LINES:  # the strokes at model scale: 1.5 px wide, 6 px apart
            band = bitonal[(y - 26) // 2 : (y - 4) // 2]
            darkest = [int(band[:, x // 2 - 1 : x // 2 + 3].min()) for x in range(x0, x1, 12)]
            self.assertLess(max(darkest), 100, f"every stroke of the line at y={y} is dark")
        self.assertEqual(int(bitonal[:30].min()), 255, "the paper above the first line (grey 235 in the page) is white")

    def test_a_bitonal_crop_has_white_paper_and_chance_zero_replays_the_grey_examples(self):
        page = self.bitonal_page()
        grey_only = render_page(*drawn_page(), side=400)
        for seed in range(4):
            before = make_example(grey_only, np.random.default_rng(seed), 128)
            replayed = make_example(page, np.random.default_rng(seed), 128, bitonal_chance=0.0)
            self.assertTrue(torch.equal(before[0], replayed[0]) and torch.equal(before[1], replayed[1]))
        image, _ = make_example(page, np.random.default_rng(3), 256, bitonal_chance=1.0)
        self.assertEqual(float(np.quantile(image.numpy(), 0.5)), 1.0, "paper is pure white, not tinted or noisy")
        self.assertLess(float(image.min()), 0.1, "and the crop holds black writing")


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


class RebuildFromOnnxTest(unittest.TestCase):
    def test_the_rebuilt_checkpoint_is_the_exported_function_and_starts_there_in_train_mode(self):
        torch.manual_seed(3)
        cfg = SegConfig(channels=(4, 8, 8, 8), decoder=8)
        model = LineSegmenter(cfg)
        page = render_page(*drawn_page(), side=400)
        image = normalise(pad_to_stride(torch.from_numpy(page.image.copy()).float().div(255)[None, None]))
        model.train()
        with torch.no_grad():  # batch norms far from the identity: statistics of the page, random scale and shift
            model(image)
            for module in model.modules():
                if isinstance(module, torch.nn.BatchNorm2d):
                    module.weight.uniform_(0.5, 1.5)
                    module.bias.uniform_(-0.3, 0.3)
        wrapped = Probabilities(model.eval()).eval()
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            export(wrapped, folder / "seg.onnx")
            manifest = {"name": "hwr-seg", "version": "t", "segmentation": {"file": "seg.onnx", "mean": [0.5], "std": [0.5], "maxSideLength": 864}, "training": {"settings": {"side": 400}}}
            (folder / "manifest.json").write_text(json.dumps(manifest))
            convs = conv_weights(folder / "seg.onnx")
            state = rebuild(folder, [page], crops=16, crop=128)
        self.assertEqual(sorted(convs), sorted(name for name, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)))
        self.assertEqual(state["model_config"], cfg.to_dict())
        self.assertEqual(state["normalisation"], {"mean": 0.5, "std": 0.5, "side": 400})
        rebuilt = LineSegmenter(cfg)
        rebuilt.load_state_dict(state["model"])
        with torch.no_grad():
            want = wrapped(image)
            self.assertLess(float((Probabilities(rebuilt.eval())(image) - want).abs().max()), 1e-5)
            crops = torch.stack([make_example(page, np.random.default_rng([11, k]), 128)[0] for k in range(16)])
            crops = normalise(crops)
            in_eval = rebuilt.eval()(crops)
            drift = float((rebuilt.train()(crops) - in_eval).abs().mean())
            for module in rebuilt.modules():  # the batch norms left as the identity plus the folded bias: the same eval function
                if isinstance(module, torch.nn.BatchNorm2d):
                    module.bias.sub_(module.running_mean)
                    module.weight.fill_(1.0)
                    module.running_mean.zero_()
                    module.running_var.fill_(1.0 - module.eps)
            self.assertLess(float((rebuilt.eval()(crops) - in_eval).abs().max()), 1e-4)
            naive = float((rebuilt.train()(crops) - in_eval).abs().mean())
        self.assertLess(drift, 0.25 * naive, f"train mode starts near the exported function ({drift:.3f} against {naive:.3f})")


if __name__ == "__main__":
    unittest.main()
