"""average_checkpoints.py: the weighted mean of checkpoints of one architecture is a checkpoint export_onnx.py
exports; its batch norms are averaged, or recomputed on training lines with --update-bn; checkpoints of another
shape or charset are refused. Small real CRNNs on real lines (support.py)."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

import support
from support import captured_output, node, write_decoding_report

import torch

import average_checkpoints
import export_onnx
from batches import make_batch
from model import CRNN, ModelConfig

SHAPE = {"height": 32, "channels": (8, 12, 16, 16, 24), "hidden": 32, "temporal_layers": 2, "width_stride": 2, "recurrent_layers": 2, "recurrent_hidden": 12}


class AverageCheckpointsTest(support.TinyDatasetCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.images = make_batch(cls.train_lines, cls.store, cls.index, 32, cls.mean, cls.std, None, 2).images

    def checkpoint(self, name: str, seed: int, charset: list[str] | None = None, **shape) -> Path:
        """A model after a few train-mode passes (batch-norm statistics of its own), saved as train.py saves one."""
        torch.manual_seed(seed)
        cfg = ModelConfig(num_classes=len(charset or self.charset) + 1, **{**SHAPE, **shape})
        model = CRNN(cfg).train()
        with torch.no_grad():
            for _ in range(3):
                model(self.images)
        path = self.root / f"{name}.pt"
        meta = {"dataset_digest": self.digest, "training_commit": "test", "mean": self.mean, "std": self.std, "charset": charset or self.charset}
        torch.save({"model": model.state_dict(), "model_config": cfg.to_dict(), "meta": meta, "epoch": seed, "epochs_done": seed, "val_cer": 0.5}, path)
        return path

    def average(self, paths: list[Path], *options: str) -> dict:
        out = self.root / "mean.pt"
        with captured_output():
            average_checkpoints.main([*map(str, paths), "--out", str(out), "--dataset", str(self.dataset), "--cache", str(self.cache), *options])
        return torch.load(out, map_location="cpu", weights_only=False)

    def test_the_weighted_mean_of_every_tensor(self) -> None:
        a, b = self.checkpoint("a", 1), self.checkpoint("b", 2)
        mean = self.average([a, b], "--weights", "1,3")
        sa, sb = (torch.load(p, map_location="cpu", weights_only=False)["model"] for p in (a, b))
        for name, tensor in mean["model"].items():
            if tensor.is_floating_point():
                torch.testing.assert_close(tensor, 0.25 * sa[name] + 0.75 * sb[name], rtol=1e-5, atol=1e-6)
            else:
                self.assertTrue(torch.equal(tensor, sa[name]), name)
        model = CRNN(ModelConfig.from_dict(mean["model_config"]))
        model.load_state_dict(mean["model"])
        self.assertEqual([entry["weight"] for entry in mean["meta"]["averaged_from"]], [1.0, 3.0])
        self.assertEqual([entry["epochs"] for entry in mean["meta"]["averaged_from"]], [1, 2])
        self.assertIsNone(mean["val_cer"])  # its own figure is not the parts': the --decoding report gives it on export

    def test_a_checkpoint_averaged_with_itself_is_itself(self) -> None:
        a = self.checkpoint("same", 4)
        mean = self.average([a, a])
        for name, tensor in torch.load(a, map_location="cpu", weights_only=False)["model"].items():
            torch.testing.assert_close(mean["model"][name], tensor)

    def test_update_bn_recomputes_the_statistics_on_training_lines(self) -> None:
        a, b = self.checkpoint("bn-a", 5), self.checkpoint("bn-b", 6)
        averaged = self.average([a, b])["model"]
        updated = self.average([a, b], "--update-bn", "6")
        self.assertEqual(updated["meta"]["batch_norm_lines"], 6)
        norms = [name for name in averaged if name.endswith("running_mean")]
        self.assertTrue(norms)
        for name in norms:
            self.assertFalse(torch.allclose(updated["model"][name], averaged[name]), name)
        for name in averaged:  # the weights themselves are the same mean
            if not name.endswith(("running_mean", "running_var", "num_batches_tracked")):
                torch.testing.assert_close(updated["model"][name], averaged[name])

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_the_mean_exports_with_its_parts_and_the_reports_figures(self) -> None:
        self.average([self.checkpoint("export-a", 10), self.checkpoint("export-b", 11)], "--update-bn", "6")
        report = write_decoding_report(self.root / "decoding.json")
        out = self.root / "mean-model"
        with captured_output():
            export_onnx.main(
                ["--checkpoint", str(self.root / "mean.pt"), "--out", str(out), "--dataset", str(self.dataset), "--cache", str(self.cache)]
                + ["--decoding", str(report), "--training-note", "the mean of two"]
            )
        training = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["training"]
        self.assertEqual((training["validationCer"], training["validationWer"]), (0.4, 0.8))
        self.assertEqual([part["epochs"] for part in training["averagedFrom"]], [10, 11])
        self.assertEqual((training["batchNormLines"], training["note"]), (6, "the mean of two"))
        self.assertNotIn("epochs", training)
        self.assertIn("not tuned in this report", training["validationBeamSearch"]["tunedOn"])

    def test_another_shape_or_charset_is_refused(self) -> None:
        a = self.checkpoint("shape-a", 7)
        with self.assertRaisesRegex(SystemExit, "different architectures"):
            self.average([a, self.checkpoint("shape-b", 8, hidden=16)])
        with self.assertRaisesRegex(SystemExit, "different charsets"):
            self.average([a, self.checkpoint("charset-b", 9, charset=list(reversed(self.charset)))])


if __name__ == "__main__":
    unittest.main()
