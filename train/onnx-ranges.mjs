// Runs a model in onnxruntime-node (the service's runtime) on raw float32 inputs and writes the
// smallest and largest value each of its outputs took over all of them: the activation ranges
// train/quantize_int8.py calibrates with (it gives a copy of the model whose chosen tensors are
// outputs). Usage: node train/onnx-ranges.mjs MODEL.onnx CASES.json RANGES.json
// CASES.json: [{ "input": "in0.bin", "dims": [n, 1, h, w] }, ...]; RANGES.json: { name: [min, max] }
import { readFileSync, writeFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';

const [modelPath, casesPath, rangesPath] = process.argv.slice(2);
if (!modelPath || !casesPath || !rangesPath) {
  console.error('usage: node train/onnx-ranges.mjs MODEL.onnx CASES.json RANGES.json');
  process.exit(2);
}
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 2, logSeverityLevel: 3 });
const ranges = {};
for (const testCase of JSON.parse(readFileSync(casesPath, 'utf8'))) {
  const bytes = readFileSync(testCase.input);
  const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const outputs = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', data, testCase.dims) });
  for (const [name, tensor] of Object.entries(outputs)) {
    let [low, high] = ranges[name] ?? [Infinity, -Infinity];
    for (const value of tensor.data) {
      if (value < low) low = value;
      if (value > high) high = value;
    }
    ranges[name] = [low, high];
  }
}
writeFileSync(rangesPath, JSON.stringify(ranges));
