"""quantize_int8.py: the shipped recognizer's float32 weights (models/hwr-htr-v3/rec.onnx) quantised by the command on a
copy of the model directory, calibrated and checked on real lines (the tiny dataset of test/fixtures), run in
onnxruntime-node as the service runs it.

- the graph: every convolution but the first in QDQ form with 7-bit weights, the LSTMs float32 (a line reads the same in any
  batch), two thirds of the size;
- it reads as the float32 model does, frame by frame, and is not the float32 model;
- the manifest points at it, keeps the float32 file and version for fine-tuning, and the service's manifest reader accepts
  it; quantising the quantised directory again writes the same file;
- a model that reads worse than allowed is not written, and the manifest is left as it was;
- the shipped rec.int8.onnx reads as the shipped rec.onnx.
"""

from __future__ import annotations

import json
import shutil
import unittest
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

import support
from support import REPO, captured_output, node, run_node

import quantize_int8
from batches import make_batch
from export_onnx import onnxruntime_node_outputs

V3 = REPO / "models" / "hwr-htr-v3"


def float_copy(target: Path) -> Path:
    """The shipped model directory as it was before quantisation: rec.onnx and a manifest that runs it."""
    target.mkdir(parents=True)
    for name in ("rec.onnx", "charset.txt"):
        shutil.copyfile(V3 / name, target / name)
    manifest = json.loads((V3 / "manifest.json").read_text(encoding="utf-8"))
    manifest["version"] = manifest["quantization"]["fromVersion"]
    manifest["recognition"]["file"] = manifest["recognition"].pop("float32File")
    del manifest["quantization"]
    manifest.pop("languageModel", None)
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return target


@unittest.skipIf(node() is None, "no Node with the project's node_modules (npm install) to run onnxruntime-node")
class QuantizeTest(support.TinyDatasetCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.model_dir = float_copy(cls.root / "v3")
        cls.command = ["--model", str(cls.model_dir), "--dataset", str(cls.dataset), "--cache", str(cls.cache)]
        with captured_output() as printed:
            quantize_int8.main(cls.command)
        cls.printed = printed.getvalue()
        cls.manifest = json.loads((cls.model_dir / "manifest.json").read_text(encoding="utf-8"))
        recognition = cls.manifest["recognition"]
        cls.batches = [make_batch(cls.train_lines + cls.val_lines, cls.store, {}, cls.HEIGHT, recognition["mean"][0], recognition["std"][0], None, 2)]

    def outputs(self, model: Path) -> np.ndarray:
        images = self.batches[0].images.numpy()
        (output,) = onnxruntime_node_outputs(model, [images])
        return output.reshape(images.shape[0], -1, len(self.charset_of_model) + 1)

    @property
    def charset_of_model(self) -> list[str]:
        return (self.model_dir / "charset.txt").read_text(encoding="utf-8").splitlines()

    def test_the_graph_is_quantised_as_onnxruntime_runs_it_fast(self) -> None:
        graph = onnx.load(str(self.model_dir / quantize_int8.QUANTISED_FILE)).graph
        ops = [n.op_type for n in graph.node]
        self.assertEqual(ops.count("LSTM"), 2)
        self.assertNotIn("DynamicQuantizeLSTM", ops)
        convolutions = [n for n in graph.node if n.op_type == "Conv"]
        self.assertEqual(len(convolutions), 10)
        float_weights = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.FLOAT}
        self.assertIn(convolutions[0].input[1], float_weights)  # the first stays float32
        dequantised = {n.output[0] for n in graph.node if n.op_type == "DequantizeLinear"}
        for convolution in convolutions[1:]:
            self.assertTrue(set(convolution.input[:2]) <= dequantised, convolution.name)
        # the weights of nine convolutions (their zero points are int8 too, one dimension)
        int8 = [numpy_helper.to_array(i) for i in graph.initializer if i.data_type == onnx.TensorProto.INT8 and len(i.dims) > 1]
        self.assertEqual(len(int8), 9)
        self.assertLessEqual(max(int(np.abs(w).max()) for w in int8), quantize_int8.WEIGHT_LEVELS)
        self.assertLess((self.model_dir / quantize_int8.QUANTISED_FILE).stat().st_size, (self.model_dir / "rec.onnx").stat().st_size * 0.7)

    def test_it_reads_as_the_float32_model_and_is_not_it(self) -> None:
        float_out = self.outputs(self.model_dir / "rec.onnx")
        int8_out = self.outputs(self.model_dir / quantize_int8.QUANTISED_FILE)
        agreement = float((float_out.argmax(-1) == int8_out.argmax(-1)).mean())
        self.assertGreater(agreement, 0.97)
        self.assertGreater(float(np.abs(float_out - int8_out).max()), 1e-3)
        self.assertIn(f"{len(self.val_lines)} validation lines, greedy CER", self.printed)

    def test_the_manifest_points_at_it_and_keeps_the_float32_model_for_fine_tuning(self) -> None:
        recognition, quantization = self.manifest["recognition"], self.manifest["quantization"]
        self.assertEqual((recognition["file"], recognition["float32File"]), ("rec.int8.onnx", "rec.onnx"))
        self.assertEqual((self.manifest["version"], quantization["fromVersion"]), ("3.3-int8", "3.3"))
        self.assertEqual((quantization["calibrationLines"], quantization["check"]["lines"]), (len(self.train_lines), len(self.val_lines)))
        script = (
            "import { loadModelSpec } from './src/recognition/models/model-manifest.ts';"
            "const spec = loadModelSpec(process.argv[1]);"
            "console.log(JSON.stringify({ version: spec.version, file: spec.recognition.file }));"
        )
        result = run_node(["--input-type=module", "-e", script, str(self.model_dir)])
        self.assertEqual(result.returncode, 0, result.stderr)
        loaded = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(loaded, {"version": "3.3-int8", "file": str(self.model_dir / "rec.int8.onnx")})

    def test_quantising_again_starts_from_the_float32_model_and_writes_the_same_file(self) -> None:
        again = self.root / "again"
        shutil.copytree(self.model_dir, again)
        with captured_output():
            quantize_int8.main(["--model", str(again), "--dataset", str(self.dataset), "--cache", str(self.cache)])
        manifest = json.loads((again / "manifest.json").read_text(encoding="utf-8"))
        self.assertEqual((manifest["version"], manifest["quantization"]["fromVersion"], manifest["recognition"]["float32File"]), ("3.3-int8", "3.3", "rec.onnx"))
        self.assertEqual((again / "rec.int8.onnx").read_bytes(), (self.model_dir / "rec.int8.onnx").read_bytes())

    def test_a_model_that_reads_worse_than_allowed_is_not_written(self) -> None:
        refused = float_copy(self.root / "refused")
        before = (refused / "manifest.json").read_text(encoding="utf-8")
        with captured_output(), self.assertRaisesRegex(SystemExit, "CER points worse than float32"):
            # no quantised model reads these lines 100 points better than float32
            quantize_int8.main(["--model", str(refused), "--dataset", str(self.dataset), "--cache", str(self.cache), "--max-cer-rise", "-100"])
        self.assertFalse((refused / quantize_int8.QUANTISED_FILE).exists())
        self.assertEqual((refused / "manifest.json").read_text(encoding="utf-8"), before)

    def test_the_shipped_quantised_model_reads_as_the_shipped_float32_model(self) -> None:
        shipped = json.loads((V3 / "manifest.json").read_text(encoding="utf-8"))
        self.assertEqual(shipped["recognition"]["file"], quantize_int8.QUANTISED_FILE)
        float_out = self.outputs(V3 / shipped["recognition"]["float32File"])
        int8_out = self.outputs(V3 / shipped["recognition"]["file"])
        self.assertGreater(float((float_out.argmax(-1) == int8_out.argmax(-1)).mean()), 0.97)

    def test_the_ranges_a_quantised_model_was_calibrated_to_are_read_back_by_the_float_names(self) -> None:
        """What a fine-tune of the shipped model widens its own ranges to (finetune.py --quantize)."""
        float_graph = onnx.load(str(V3 / "rec.onnx")).graph
        ranges = quantize_int8.quantised_ranges(onnx.load(str(V3 / quantize_int8.QUANTISED_FILE)))
        self.assertEqual(set(ranges), set(quantize_int8.probed_tensors(float_graph)))
        quantised = quantize_int8.quantise(onnx.load(str(V3 / "rec.onnx")), ranges)
        shipped = onnx.load(str(V3 / quantize_int8.QUANTISED_FILE))
        def scales(model: onnx.ModelProto) -> dict[str, float]:
            return {i.name: float(numpy_helper.to_array(i)) for i in model.graph.initializer
                    if i.name.endswith(".scale") and not i.name.endswith((".w.scale", ".b.scale"))}

        self.assertEqual(len(scales(shipped)), 18)
        # quantised again at the ranges read back, the activations get the shipped scales (to float rounding)
        for name, scale in scales(shipped).items():
            self.assertAlmostEqual(scales(quantised)[name], scale, delta=scale * 1e-4, msg=name)
        wide = quantize_int8.widened({"a": (-1.0, 2.0), "b": (0.0, 1.0)}, {"a": (-3.0, 1.0), "c": (0.0, 9.0)})
        self.assertEqual(wide, {"a": (-3.0, 2.0), "b": (0.0, 1.0)})


if __name__ == "__main__":
    unittest.main()
