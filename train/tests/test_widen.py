"""widen.py: a trained BiLSTM head made wider computes exactly what it computed, and its new units learn; train.py
--init-from with a larger --recurrent-hidden starts from such a widened copy. Small real CRNNs of v3's shape (two
BiLSTM layers feeding the classifier straight) on real lines (support.py)."""

from __future__ import annotations

import unittest

import support
from support import captured_output

import torch
import torch.nn.functional as F

import train
import widen
from batches import make_batch
from model import CRNN, ModelConfig
from widen import widen_recurrent_head

SHAPE = {"height": 32, "channels": (8, 12, 16, 16, 24), "hidden": 32, "temporal_layers": 2, "width_stride": 2, "recurrent_layers": 2}


class WidenTest(support.TinyDatasetCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.batch = make_batch(cls.train_lines, cls.store, cls.index, 32, cls.mean, cls.std, None, 2)

    def trained_looking(self, units: int, seed: int = 3) -> tuple[CRNN, ModelConfig]:
        torch.manual_seed(seed)
        cfg = ModelConfig(num_classes=len(self.charset) + 1, recurrent_hidden=units, **SHAPE)
        model = CRNN(cfg).train()
        with torch.no_grad():
            for _ in range(3):
                model(self.batch.images)
        return model.eval(), cfg

    def widened(self, model: CRNN, cfg: ModelConfig, units: int) -> CRNN:
        wider = CRNN(ModelConfig.from_dict({**cfg.to_dict(), "recurrent_hidden": units}))
        wider.load_state_dict(widen_recurrent_head(model.state_dict(), cfg, units, torch.Generator().manual_seed(1)))
        return wider.eval()

    def loss(self, model: CRNN) -> torch.Tensor:
        b = self.batch
        return F.ctc_loss(model(b.images).transpose(0, 1), b.targets, b.frames, b.target_lengths, blank=0, zero_infinity=True)

    def test_the_wider_head_computes_what_the_narrow_one_did(self) -> None:
        model, cfg = self.trained_looking(10)
        for units in (10, 14, 40):
            wider = self.widened(model, cfg, units)
            self.assertEqual(wider.recurrent.hidden_size, units)
            with torch.no_grad():
                # the same sums with zeros added: equal up to the order of float additions
                self.assertLess(float((wider(self.batch.images) - model(self.batch.images)).abs().max()), 1e-5)
        # in train mode too (batch statistics), once dropout's random masks are out of the way
        wider = self.widened(model, cfg, 14)
        for net in (model, wider):
            net.train()
            net.recurrent.dropout = 0.0
            for module in net.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
        with torch.no_grad():
            self.assertLess(float((wider(self.batch.images) - model(self.batch.images)).abs().max()), 1e-5)

    def test_the_new_units_learn(self) -> None:
        model, cfg = self.trained_looking(10)
        wider = self.widened(model, cfg, 14).train()
        new_rows = torch.cat([torch.arange(10, 14) + gate * 14 for gate in range(4)])
        # first step: only the weights out of the new units (zero so far) have a gradient; their inputs' weights do not
        self.loss(wider).backward()
        classifier_grad = wider.classifier.weight.grad[:, torch.cat([torch.arange(10, 14), torch.arange(24, 28)])]
        self.assertGreater(float(classifier_grad.abs().max()), 0.0)
        self.assertEqual(float(wider.recurrent.weight_ih_l0.grad[new_rows].abs().max()), 0.0)
        torch.optim.SGD(wider.parameters(), lr=0.1).step()
        wider.zero_grad()
        # second step: the new units' own weights learn too
        self.loss(wider).backward()
        self.assertGreater(float(wider.recurrent.weight_ih_l0.grad[new_rows].abs().max()), 0.0)
        self.assertGreater(float(wider.recurrent.weight_hh_l1_reverse.grad[new_rows].abs().max()), 0.0)

    def test_heads_it_cannot_widen_are_refused(self) -> None:
        model, cfg = self.trained_looking(10)
        with self.assertRaisesRegex(ValueError, "cannot narrow"):
            widen_recurrent_head(model.state_dict(), cfg, 8, torch.Generator())
        # 2 x 16 = hidden: the LSTM's output would be added to the convolutional features
        with self.assertRaisesRegex(ValueError, "non-residual"):
            widen_recurrent_head(model.state_dict(), cfg, 16, torch.Generator())
        residual, residual_cfg = self.trained_looking(0)
        with self.assertRaisesRegex(ValueError, "non-residual"):
            widen_recurrent_head(residual.state_dict(), residual_cfg, 20, torch.Generator())

    def test_train_py_starts_a_wider_run_from_the_checkpoint(self) -> None:
        model, cfg = self.trained_looking(10)
        checkpoint = self.root / "narrow.pt"
        meta = {"dataset_digest": self.digest, "training_commit": "test", "mean": self.mean, "std": self.std, "charset": self.charset}
        torch.save({"model": model.state_dict(), "model_config": cfg.to_dict(), "meta": meta, "epoch": 4, "val_cer": 0.5}, checkpoint)
        run = self.root / "wider-run"
        with captured_output() as printed:
            train.main(
                ["--dataset", str(self.dataset), "--cache", str(self.cache), "--run", str(run), "--init-from", str(checkpoint),
                 "--recurrent-layers", "2", "--recurrent-hidden", "14", "--epochs", "1", "--threads", "1", "--lr", "0"]
            )  # fmt: skip
        self.assertIn("widened the LSTM head from 10 to 14 units a direction", printed.getvalue())
        best = torch.load(run / "best.pt", map_location="cpu", weights_only=False)
        self.assertEqual(best["model_config"]["recurrent_hidden"], 14)
        self.assertEqual(best["meta"]["initialised_from"]["widened_recurrent_units"], [10, 14])
        # at learning rate 0 the LSTM and the classifier are still the widened copy of the checkpoint's
        expected = widen_recurrent_head(model.state_dict(), cfg, 14, torch.Generator().manual_seed(7))
        for name, value in best["model"].items():
            if name.startswith(("recurrent.", "classifier.")):
                self.assertTrue(torch.equal(value, expected[name]), name)

    def test_the_command_writes_a_widened_copy_that_reads_the_same(self) -> None:
        model, cfg = self.trained_looking(10)
        checkpoint, out = self.root / "to-widen.pt", self.root / "widened.pt"
        meta = {"dataset_digest": self.digest, "training_commit": "test", "mean": self.mean, "std": self.std, "charset": self.charset}
        torch.save({"model": model.state_dict(), "model_config": cfg.to_dict(), "meta": meta, "optimizer": {}, "epoch": 2}, checkpoint)
        with captured_output() as printed:
            widen.main(["--checkpoint", str(checkpoint), "--units", "14", "--out", str(out)])
        self.assertIn("widened from 10 to 14 units", printed.getvalue())
        state = torch.load(out, map_location="cpu", weights_only=False)
        self.assertNotIn("optimizer", state)
        self.assertEqual(state["meta"]["widened"]["recurrent_units"], [10, 14])
        wider = CRNN(ModelConfig.from_dict(state["model_config"]))
        wider.load_state_dict(state["model"])
        with torch.no_grad():
            self.assertLess(float((wider.eval()(self.batch.images) - model(self.batch.images)).abs().max()), 1e-5)
        with self.assertRaisesRegex(SystemExit, "cannot narrow"):
            widen.main(["--checkpoint", str(checkpoint), "--units", "8", "--out", str(out)])


if __name__ == "__main__":
    unittest.main()
