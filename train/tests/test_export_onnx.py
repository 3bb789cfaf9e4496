"""The ONNX export of train/export_onnx.py: a small recognizer (the real CRNN, fewer channels)
exported with dynamic batch and width passes onnx.checker, and its outputs match PyTorch's on
real handwritten lines (support.py), one at a time at several widths and as a padded batch.
The outputs are compared in onnxruntime when Python has it, and always, where Node and the
project's node_modules are there, through train/check-onnx.mjs in onnxruntime-node, the runtime
the service uses; that check is also shown to refuse a model that differs. Last, export_onnx.py's
command writes a model directory that the service's manifest reader accepts."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

import support
from support import REPO, captured_output, make_dataset, node, run_node, write_decoding_report

import numpy as np
import onnx
import torch

import export_onnx
from batches import make_batch, pixel_statistics
from data import ImageStore, build_charset, ensure_extracted, read_split
from metrics import greedy_decode
from model import CRNN, ModelConfig

try:
    import onnxruntime
except ImportError:  # Debian's python3-onnx comes without it; the Node check below covers parity
    onnxruntime = None

HEIGHT = 32


def small_model(num_classes: int, seed: int, batches: list[torch.Tensor]) -> CRNN:
    """The shipped architecture at a tenth of its width; batch norm statistics from real lines, then eval mode."""
    torch.manual_seed(seed)
    model = CRNN(ModelConfig(num_classes=num_classes, height=HEIGHT, channels=(8, 12, 16, 16, 24), hidden=32, temporal_layers=3, width_stride=2))
    model.train()
    with torch.no_grad():
        for images in batches:
            model(images)
    return model.eval()


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name)
        cls.dataset = make_dataset(cls.root)
        cls.cache = cls.root / "cache"
        images, cls.digest = ensure_extracted(cls.dataset, cls.cache)
        train = read_split(cls.dataset, "train", images)
        val = read_split(cls.dataset, "val", images)
        cls.charset = build_charset(train + val)
        cls.index = {ch: i + 1 for i, ch in enumerate(cls.charset)}
        store = ImageStore(images, train + val)
        cls.mean, cls.std = pixel_statistics(train, store, HEIGHT)

        def batch(group):
            return make_batch(group, store, cls.index, HEIGHT, cls.mean, cls.std, None, 2)

        cls.model = small_model(len(cls.charset) + 1, 0, [batch(train[:2]).images, batch(train[2:]).images])
        cls.other = small_model(len(cls.charset) + 1, 1, [batch(train).images])
        # as export_onnx.parity_inputs: lines one at a time, narrow to wide, and one padded batch of three
        lines = sorted(train + val, key=lambda line: line.width)
        cls.cases = []
        for group in [[line] for line in lines[::2]] + [lines[1:4]]:
            b = batch(group)
            cls.cases.append((b.images, b.frames.tolist(), b.texts))
        cls.onnx_path = cls.root / "rec.onnx"
        with captured_output():
            export_onnx.export(cls.model, cls.onnx_path)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_the_export_is_a_valid_onnx_model_with_dynamic_batch_and_width(self) -> None:
        model = onnx.load(str(self.onnx_path))
        onnx.checker.check_model(model)
        self.assertEqual([i.name for i in model.graph.input], ["image"])
        self.assertEqual([o.name for o in model.graph.output], ["log_probs"])
        dims = model.graph.input[0].type.tensor_type.shape.dim
        self.assertEqual([d.dim_param or d.dim_value for d in dims], ["batch", 1, HEIGHT, "width"])
        out = model.graph.output[0].type.tensor_type.shape.dim
        self.assertEqual(out[0].dim_param, "batch")
        self.assertEqual(out[1].dim_param, "frames")
        self.assertEqual(model.opset_import[0].version, 13)

    def test_the_cases_span_several_widths_and_a_padded_batch(self) -> None:
        widths = [images.shape[-1] for images, _, _ in self.cases]
        self.assertGreaterEqual(len(set(widths)), 3)
        self.assertEqual(self.cases[-1][0].shape[0], 3)
        self.assertEqual(len(set(self.cases[-1][1])), 3)  # three lines of three lengths in one batch

    @unittest.skipIf(onnxruntime is None, "onnxruntime is not importable here (the Node check covers parity)")
    def test_onnxruntime_in_python_gives_pytorchs_outputs(self) -> None:
        session = onnxruntime.InferenceSession(str(self.onnx_path), providers=["CPUExecutionProvider"])
        for images, frames, _ in self.cases:
            with torch.no_grad():
                expected = self.model(images).numpy()
            (got,) = session.run(None, {"image": images.numpy()})
            self.assertLess(float(np.abs(got - expected).max()), export_onnx.TOLERANCE)
            self.assertEqual(greedy_decode(torch.from_numpy(got), frames, self.charset), greedy_decode(torch.from_numpy(expected), frames, self.charset))

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_onnxruntime_node_gives_pytorchs_outputs(self) -> None:
        with captured_output() as printed:
            worst = export_onnx.check_with_onnxruntime(self.model, self.onnx_path, self.cases, self.charset)
        self.assertLess(worst, export_onnx.TOLERANCE)
        self.assertGreater(worst, 0.0)  # two runtimes, float32: equal to the last bit would mean one ran twice
        self.assertEqual(printed.getvalue().count("greedy text identical: True"), len(self.cases))

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_the_check_refuses_an_export_that_is_not_the_model(self) -> None:
        with captured_output(), self.assertRaisesRegex(SystemExit, "does not match PyTorch"):
            export_onnx.check_with_onnxruntime(self.other, self.onnx_path, self.cases, self.charset)

    def save_checkpoint(self, name: str, **figures: float) -> Path:
        """The small model saved as train.py saves a checkpoint, with the run's own validation figures given."""
        path = self.root / name
        meta = {"charset": self.charset, "mean": self.mean, "std": self.std, "dataset_digest": self.digest, "training_commit": "test"}
        torch.save({"model_config": self.model.cfg.to_dict(), "model": self.model.state_dict(), "meta": meta, "epoch": 1, **figures}, path)
        return path

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_the_command_writes_a_model_directory_the_service_accepts(self) -> None:
        checkpoint = self.save_checkpoint("best.pt", val_cer=0.9)
        out = self.root / "model-dir"
        with captured_output() as printed:
            export_onnx.main(
                ["--checkpoint", str(checkpoint), "--out", str(out), "--dataset", str(self.dataset), "--cache", str(self.cache), "--version", "0-test", "--trailing-padding", "32"]
            )
        self.assertIn(f"wrote {out}", printed.getvalue())
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["charset.txt", "manifest.json", "rec.onnx"])
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        self.assertEqual((manifest["format"], manifest["version"]), ("hwr-model/1", "0-test"))
        self.assertEqual(manifest["recognition"]["inputHeight"], HEIGHT)
        self.assertEqual(manifest["recognition"]["widthMultiple"], 2)
        self.assertEqual(manifest["training"]["datasetDigest"], self.digest)
        self.assertLessEqual(manifest["training"]["onnxMaxAbsDifference"], export_onnx.TOLERANCE)
        self.assertEqual((out / "charset.txt").read_text(encoding="utf-8"), "".join(ch + "\n" for ch in self.charset))
        # the service reads the directory as a MODEL_DIR (src/recognition/models/model-manifest.ts)
        script = (
            "import { loadModelSpec } from './src/recognition/models/model-manifest.ts';"
            "const spec = loadModelSpec(process.argv[1]);"
            "console.log(JSON.stringify({ name: spec.name, recognition: spec.recognition.file, trailingPadding: spec.recognition.trailingPadding }));"
        )
        result = run_node(["--input-type=module", "-e", script, str(out)])
        self.assertEqual(result.returncode, 0, result.stderr)
        loaded = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(loaded["name"], "hwr-htr")
        self.assertTrue(loaded["recognition"].endswith("rec.onnx"), loaded)
        self.assertEqual(loaded["trailingPadding"], 32)

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_the_directorys_own_lm_file_survives_an_export_into_it_and_a_stale_form_goes(self) -> None:
        checkpoint = self.save_checkpoint("lm.pt", val_cer=0.9)
        out = self.root / "with-lm"
        out.mkdir()
        tiny = (REPO / "test" / "fixtures" / "ctc-beam-search" / "tiny-lm.bin").read_bytes()
        (out / "lm.bin").write_bytes(tiny)
        (out / "lm.json.gz").write_bytes(b"an earlier export's LM")
        with captured_output():
            export_onnx.main(["--checkpoint", str(checkpoint), "--out", str(out), "--dataset", str(self.dataset), "--cache", str(self.cache),
                              "--version", "0-test", "--language-model", str(out / "lm.bin")])
        self.assertEqual((out / "lm.bin").read_bytes(), tiny)
        self.assertFalse((out / "lm.json.gz").exists())
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        self.assertEqual((manifest["languageModel"]["file"], manifest["languageModel"]["format"]), ("lm.bin", "hwr-char-ngram/2"))

    @unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
    def test_the_decoding_reports_greedy_figures_win_over_the_runs_own(self) -> None:
        """A run's own validation figures may come from the compact copy it trained on; the --decoding report's are
        measured on the original lines, so the manifest records those where a report is given."""
        checkpoint = self.save_checkpoint("own-figures.pt", val_cer=0.9, val_wer=0.95)
        report = write_decoding_report(self.root / "decoding.json")
        recorded = {}
        for name, extra in (("without-report", []), ("with-report", ["--decoding", str(report)])):
            out = self.root / name
            with captured_output():
                export_onnx.main(["--checkpoint", str(checkpoint), "--out", str(out), "--dataset", str(self.dataset), "--cache", str(self.cache), *extra])
            training = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["training"]
            recorded[name] = (training["validationCer"], training["validationWer"])
        self.assertEqual(recorded, {"without-report": (0.9, 0.95), "with-report": (0.4, 0.8)})


if __name__ == "__main__":
    unittest.main()
