// An 8-bit model's first max pool, run on its 8-bit values in onnxruntime's channels-last layout.
//
// train/quantize_int8.py leaves a recognizer's first convolution in float32, so the model begins
// Conv → Relu → MaxPool → QuantizeLinear → (8-bit convolutions). onnxruntime moves the
// quantisation before the pool (quantising keeps the order of values, so the maximum of the
// quantised values is the quantised maximum), but leaves that pool in the channels-first layout,
// where its 8-bit kernel is slow: 17 ms of a 120 ms run of hwr-htr 3.3-int8 on eight lines, where
// the same pool takes 1 ms in float32 or channels-last (docs/recognition.md, "An 8-bit
// recognizer"). Written here as
//
//   QuantizeLinear → Transpose to NHWC → com.microsoft NhwcMaxPool → Transpose back
//
// onnxruntime cancels the second transpose against the one it puts before the next 8-bit
// convolution; the outputs are the same to the bit. Only onnxruntime runs the rewritten graph
// (the inference worker's sessions), so its own operator is fine here; the model file keeps
// standard ONNX.
import { GraphNode, type OnnxGraph } from './onnx-graph.ts';

const MICROSOFT_DOMAIN = 'com.microsoft';
const NCHW_TO_NHWC = [0, 2, 3, 1];
const NHWC_TO_NCHW = [0, 3, 1, 2];

/** Rewrites each such pool of a decoded graph in place; how many. */
export function poolQuantisedValues(graph: OnnxGraph): number {
  let rewritten = 0;
  for (const pool of [...graph.nodes]) {
    const quantise = rewritablePool(graph, pool);
    if (!quantise) continue;
    const input = pool.inputs[0] as string;
    const output = quantise.outputs[0] as string;
    const quantised = graph.newName(`${output}.before_pool`);
    const channelsLast = graph.newName(`${output}.nhwc`);
    const pooled = graph.newName(`${output}.pooled_nhwc`);
    const kernel = pool.intsAttribute('kernel_shape') as number[];
    const nhwcPool = GraphNode.create('NhwcMaxPool', [channelsLast], [pooled], MICROSOFT_DOMAIN);
    nhwcPool.setIntsAttribute('kernel_shape', kernel);
    nhwcPool.setIntsAttribute('strides', pool.intsAttribute('strides') ?? kernel.map(() => 1));
    const toNhwc = GraphNode.create('Transpose', [quantised], [channelsLast]);
    toNhwc.setIntsAttribute('perm', NCHW_TO_NHWC);
    const toNchw = GraphNode.create('Transpose', [pooled], [output]);
    toNchw.setIntsAttribute('perm', NHWC_TO_NCHW);
    quantise.inputs = [input, ...quantise.inputs.slice(1)];
    quantise.outputs = [quantised];
    graph.nodes.splice(graph.nodes.indexOf(pool), 1);
    graph.nodes.splice(graph.nodes.indexOf(quantise) + 1, 0, toNhwc, nhwcPool, toNchw);
    rewritten += 1;
  }
  if (rewritten > 0) graph.importOpset(MICROSOFT_DOMAIN, 1);
  return rewritten;
}

/**
 * The QuantizeLinear that alone reads `pool`, where the pair may be rewritten: a 2-D MaxPool of
 * float values (not dequantised ones: onnxruntime already pools those in 8 bits, channels-last)
 * without padding, dilation, rounding up or indices; quantised by one positive stored scale, so
 * that quantising keeps the order of values.
 */
function rewritablePool(graph: OnnxGraph, pool: GraphNode): GraphNode | undefined {
  if (pool.opType !== 'MaxPool' || pool.inputs.length !== 1 || pool.outputs.length !== 1) return undefined;
  const kernel = pool.intsAttribute('kernel_shape');
  if (kernel?.length !== 2) return undefined;
  const autoPad = pool.stringAttribute('auto_pad');
  if (autoPad !== undefined && autoPad !== 'NOTSET' && autoPad !== 'VALID') return undefined;
  if (!(pool.intsAttribute('pads') ?? []).every((pad) => pad === 0)) return undefined;
  if (!(pool.intsAttribute('dilations') ?? []).every((dilation) => dilation === 1)) return undefined;
  if ((pool.intAttribute('ceil_mode') ?? 0) !== 0 || (pool.intAttribute('storage_order') ?? 0) !== 0) return undefined;
  if (graph.producer(pool.inputs[0] as string)?.opType === 'DequantizeLinear') return undefined;
  const output = pool.outputs[0] as string;
  if (graph.outputs.has(output)) return undefined;
  const readers = graph.nodes.filter((node) => node.inputs.includes(output));
  const quantise = readers[0];
  if (readers.length !== 1 || quantise?.opType !== 'QuantizeLinear' || quantise.inputs[0] !== output) return undefined;
  if (quantise.inputs.slice(1).includes(output)) return undefined;
  const scale = quantise.inputs[1] ? graph.tensor(quantise.inputs[1]) : undefined;
  if (scale?.values.length !== 1 || !((scale.values[0] as number) > 0)) return undefined;
  return quantise;
}
