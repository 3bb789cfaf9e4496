"""checkpoint_from_onnx.py: a recognizer exported to ONNX (batch norms folded, LSTM gates reordered) comes back
as a PyTorch checkpoint that computes the same function, with its architecture read off the graph; in train
mode (batch statistics) it starts where the exported model is; train.py starts a run from it (--init-from).
Small real CRNNs on real lines (support.py): one with a 2-layer BiLSTM of its own width at stride 2 (v3's
shape), one with the residual LSTM at stride 4."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

import support
from support import captured_output, node

import torch

import checkpoint_from_onnx
import export_onnx
import train
from batches import make_batch
from data import write_charset
from model import CRNN, ModelConfig

HEIGHT = 32


def trained_looking_model(num_classes: int, seed: int, batches: list[torch.Tensor], **shape) -> CRNN:
    """The real CRNN, small, with batch norms that are far from the identity (statistics from real lines, random scale
    and shift), in eval mode."""
    torch.manual_seed(seed)
    model = CRNN(ModelConfig(num_classes=num_classes, height=HEIGHT, channels=(8, 12, 16, 16, 24), hidden=32, temporal_layers=2, **shape))
    model.train()
    with torch.no_grad():
        for images in batches:
            model(images)
        for module in model.modules():
            if isinstance(module, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
    return model.eval()


def without_dropout(model: CRNN) -> None:
    """Train mode then differs from eval mode only by the batch norms' statistics."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    if model.recurrent is not None:
        model.recurrent.dropout = 0.0


class CheckpointFromOnnxTest(support.TinyDatasetCase):
    def images(self, lines, stride: int) -> torch.Tensor:
        return make_batch(lines, self.store, self.index, HEIGHT, self.mean, self.std, None, stride).images

    def model_directory(self, name: str, model: CRNN) -> Path:
        """As export_onnx.py writes one: rec.onnx, charset.txt and the manifest's fields the rebuild reads."""
        out = self.root / name
        out.mkdir()
        with captured_output():
            export_onnx.export(model, out / "rec.onnx")
        write_charset(self.charset, out / "charset.txt")
        manifest = {
            "format": "hwr-model/1",
            "name": "hwr-htr",
            "version": name,
            "recognition": {"file": "rec.onnx", "charset": "charset.txt", "inputHeight": HEIGHT, "mean": [self.mean], "std": [self.std]},
            "training": {"datasetDigest": self.digest, "trainingCommit": "test", "epochs": 3, "validationCer": 0.5},
        }
        (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        return out

    def rebuilt(self, directory: Path, calibration_lines: int = 6) -> tuple[CRNN, dict]:
        state = checkpoint_from_onnx.rebuild(directory, self.dataset, self.cache, calibration_lines)
        model = CRNN(ModelConfig.from_dict(state["model_config"]))
        model.load_state_dict(state["model"])
        return model.eval(), state

    def check_same_function(self, shape: dict) -> None:
        stride = shape["width_stride"]
        original = trained_looking_model(len(self.charset) + 1, 3, [self.images(self.train_lines, stride)], **shape)
        model, state = self.rebuilt(self.model_directory(f"m{stride}", original))
        read = ModelConfig.from_dict(state["model_config"])
        for field in ("num_classes", "height", "channels", "hidden", "temporal_layers", "kernel", "width_stride", "recurrent_layers"):
            self.assertEqual(getattr(read, field), getattr(original.cfg, field), field)
        self.assertEqual(model.recurrent_residual, original.recurrent_residual)
        self.assertEqual(state["meta"]["charset"], self.charset)
        self.assertEqual((state["meta"]["mean"], state["meta"]["dataset_digest"]), (self.mean, self.digest))
        for group in ([line] for line in self.train_lines + self.val_lines):
            images = self.images(group, stride)
            with torch.no_grad():
                self.assertLess(float((model(images) - original(images)).abs().max()), 1e-4)
        wide = self.images(self.train_lines[:3], stride)  # a padded batch
        with torch.no_grad():
            self.assertLess(float((model(wide) - original(wide)).abs().max()), 1e-4)

    def test_a_bilstm_model_at_stride_2_comes_back_as_the_same_function(self) -> None:
        self.check_same_function({"width_stride": 2, "recurrent_layers": 2, "recurrent_hidden": 12})

    def test_a_residual_lstm_model_at_stride_4_comes_back_as_the_same_function(self) -> None:
        self.check_same_function({"width_stride": 4, "recurrent_layers": 1, "recurrent_hidden": 0})

    def test_in_train_mode_it_starts_where_the_exported_model_is(self) -> None:
        shape = {"width_stride": 2, "recurrent_layers": 2, "recurrent_hidden": 12, "dropout": 0.0}
        original = trained_looking_model(len(self.charset) + 1, 5, [self.images(self.train_lines, 2)], **shape)
        directory = self.model_directory("train-mode", original)
        model, state = self.rebuilt(directory)
        cfg = ModelConfig.from_dict(state["model_config"])
        # the calibration lines again (same seed: the same augmented batches), read with batch statistics
        batches = checkpoint_from_onnx.calibration_batches(self.dataset, self.cache, 6, cfg, self.charset, self.mean, self.std, seed=11)
        self.assertEqual(len(batches), 1)
        without_dropout(model)
        with torch.no_grad():
            expected = model.eval()(batches[0])
            drift = float((model.train()(batches[0]) - expected).abs().max())
        self.assertLess(drift, 1e-3)
        # without the calibration (identity batch norms plus the folded bias) batch statistics change the function
        naive = CRNN(cfg)
        convs, lstms, classifier, _ = checkpoint_from_onnx.read_graph(directory / "rec.onnx")
        checkpoint_from_onnx.load_weights(naive, convs, lstms, classifier)
        without_dropout(naive)
        with torch.no_grad():
            naive_drift = float((naive.train()(batches[0]) - naive.eval()(batches[0])).abs().max())
        self.assertGreater(naive_drift, 100 * max(drift, 1e-6))

    def test_a_graph_that_is_not_a_crnn_is_refused(self) -> None:
        original = trained_looking_model(len(self.charset) + 1, 4, [self.images(self.train_lines, 2)], width_stride=2)
        directory = self.model_directory("wrong-charset", original)
        (directory / "charset.txt").write_text("a\nb\n", encoding="utf-8")
        with self.assertRaisesRegex(SystemExit, "classes in the graph"):
            checkpoint_from_onnx.rebuild(directory, self.dataset, self.cache, 6)

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_the_command_proves_the_checkpoint_and_train_py_starts_from_it(self) -> None:
        original = trained_looking_model(len(self.charset) + 1, 6, [self.images(self.train_lines, 2)], width_stride=2, recurrent_layers=1, recurrent_hidden=10)
        directory = self.model_directory("command", original)
        checkpoint = self.root / "rebuilt.pt"
        with captured_output() as printed:
            checkpoint_from_onnx.main(["--model", str(directory), "--out", str(checkpoint), "--dataset", str(self.dataset), "--cache", str(self.cache), "--calibration-lines", "6"])
        self.assertIn("max |rebuilt - onnx|", printed.getvalue())
        self.assertEqual(printed.getvalue().count("greedy text identical: True"), 6)
        run = self.root / "run"
        with captured_output() as printed:
            train.main(
                ["--dataset", str(self.dataset), "--cache", str(self.cache), "--run", str(run), "--init-from", str(checkpoint), "--recurrent-layers", "1",
                 "--recurrent-hidden", "10", "--epochs", "2", "--threads", "1", "--snapshot-every", "1"]
            )  # fmt: skip
        self.assertIn("epoch 2 done", printed.getvalue())
        # a point of the trajectory per epoch, without optimizer state, for average_checkpoints.py
        self.assertEqual(sorted(p.name for p in run.glob("snapshot-*.pt")), ["snapshot-001.pt", "snapshot-002.pt"])
        kept = torch.load(run / "snapshot-001.pt", map_location="cpu", weights_only=False)
        self.assertNotIn("optimizer", kept)
        self.assertEqual(kept["epochs_done"], 1)
        self.assertIsInstance(kept["val_cer"], float)
        best = torch.load(run / "best.pt", map_location="cpu", weights_only=False)
        self.assertEqual(best["meta"]["initialised_from"]["checkpoint"], str(checkpoint))
        self.assertEqual(best["meta"]["initialised_from"]["epochs"], 3)

    def test_time_loader_makes_one_epoch_of_batches_and_trains_nothing(self) -> None:
        for workers in ("0", "1"):
            run = self.root / f"loader-{workers}"
            with captured_output() as printed:
                train.main(
                    ["--dataset", str(self.dataset), "--cache", str(self.cache), "--run", str(run), "--epochs", "2", "--threads", "1",
                     "--max-batch", "4", "--workers", workers, "--time-loader"]
                )  # fmt: skip
            line = next(text for text in printed.getvalue().splitlines() if text.startswith("loader:"))
            # every training line once, in width batches of at most 4 lines
            self.assertRegex(line, rf"^loader: {len(self.train_lines)} lines in 2 batches, [0-9.]+ s \([0-9]+ lines/s; .*\), {workers} workers$")
            self.assertNotIn("epoch 1 done", printed.getvalue())
            self.assertFalse((run / "best.pt").exists())
            self.assertFalse((run / "snapshot-001.pt").exists())


if __name__ == "__main__":
    unittest.main()
