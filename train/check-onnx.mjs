// Runs an exported recognizer in onnxruntime-node (the runtime the service uses) on raw float32
// inputs written by export_onnx.py and writes the outputs back for comparison with PyTorch.
// Usage: node train/check-onnx.mjs MODEL.onnx CASES.json
// CASES.json: [{ "input": "in0.bin", "dims": [n, 1, h, w], "output": "out0.bin" }, ...]
import { readFileSync, writeFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';

const [modelPath, casesPath] = process.argv.slice(2);
if (!modelPath || !casesPath) {
  console.error('usage: node train/check-onnx.mjs MODEL.onnx CASES.json');
  process.exit(2);
}
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
for (const testCase of JSON.parse(readFileSync(casesPath, 'utf8'))) {
  const bytes = readFileSync(testCase.input);
  const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const outputs = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', data, testCase.dims) });
  const output = outputs[session.outputNames[0]];
  writeFileSync(testCase.output, Buffer.from(output.data.buffer, output.data.byteOffset, output.data.byteLength));
  console.log(`onnxruntime-node: input [${testCase.dims.join(', ')}] -> output [${output.dims.join(', ')}]`);
}
