// Rewrites of the chains of elementwise operators that PaddleOCR's ONNX exports (PP-OCRv4 and its
// PP-LCNet backbones) spell out one operator at a time, and that onnxruntime does not fuse. Each
// pass over a tensor costs a read and a write of all of it, and these chains were half of
// PP-OCRv4's recognition time (docs/recognition.md, "Model graphs rewritten at load"). Each
// rewrite computes the same function, up to float rounding:
//
// - a learnable affine block after a convolution, Conv → Mul(s) → Add(b), becomes the convolution
//   with weights s·W and bias s·B + b;
// - hard swish, x · Clip(x + 3, 0, 6) / 6, becomes x · HardSigmoid(x) (alpha 1/6, beta 1/2);
// - a learnable affine block read only by a pointwise convolution (1 × 1 kernel, one group, no
//   padding), Mul(s) → Add(b) → Conv, becomes that convolution with weights s·W and bias
//   B + b·ΣW (summed over its input channels): with no padding every output reads only affine
//   inputs, so this is exact up to rounding (before a padded convolution it would not be);
// - a learnable affine block elsewhere, Mul(s) → Add(b), becomes one BatchNormalization with scale s,
//   bias b, mean 0, variance 1 and epsilon 0 (one pass instead of two).
//
// Only scalar s and b, tensors stored in the file, and links no other node reads are rewritten.
import { GraphNode, OnnxGraph, type FloatTensor } from './onnx-graph.ts';

export interface FusionCounts {
  affineIntoConv: number;
  hardSwish: number;
  affineIntoPointwise: number;
  affineAsBatchNorm: number;
}

/** The lowest default-domain opset whose HardSigmoid and BatchNormalization these rewrites write. */
const MIN_OPSET = 9;

/** The model rewritten, or null when none of the chains is in it (or its opset is older than these operators). */
export function fuseElementwiseChains(bytes: Uint8Array): { bytes: Uint8Array; counts: FusionCounts } | null {
  const graph = OnnxGraph.decode(bytes);
  const counts = fuseGraphChains(graph);
  return counts ? { bytes: graph.encode(), counts } : null;
}

/** Fuses the chains of a decoded graph in place; null, the graph untouched, when it has none or its opset is older than these operators. */
export function fuseGraphChains(graph: OnnxGraph): FusionCounts | null {
  if (graph.opsetVersion('') < MIN_OPSET) return null;
  const counts: FusionCounts = {
    affineIntoConv: foldAffineIntoConvolutions(graph),
    hardSwish: fuseHardSwish(graph),
    affineIntoPointwise: foldAffineIntoPointwise(graph),
    affineAsBatchNorm: affineAsBatchNorm(graph),
  };
  if (Object.values(counts).every((count) => count === 0)) return null;
  graph.removeUnusedConstants();
  return counts;
}

/** Who reads each tensor name, as the graph stands now. */
function readersOf(graph: OnnxGraph): Map<string, GraphNode[]> {
  const readers = new Map<string, GraphNode[]>();
  for (const node of graph.nodes)
    for (const name of node.inputs) {
      const list = readers.get(name) ?? [];
      list.push(node);
      readers.set(name, list);
    }
  return readers;
}

/** The one node that reads `name`, when it is of type `opType` and `name` is not a graph output. */
function onlyReader(graph: OnnxGraph, readers: Map<string, GraphNode[]>, name: string, opType: string): GraphNode | undefined {
  const list = readers.get(name) ?? [];
  if (list.length !== 1 || graph.outputs.has(name)) return undefined;
  const node = list[0] as GraphNode;
  return node.opType === opType && new Set(node.inputs).size === node.inputs.length ? node : undefined;
}

function scalarValue(graph: OnnxGraph, name: string): number | undefined {
  const tensor = graph.tensor(name);
  return tensor && tensor.values.length === 1 ? tensor.values[0] : undefined;
}

/** A binary node's other input than `name`, with its scalar value when it is a stored scalar. */
function otherOperand(graph: OnnxGraph, node: GraphNode, name: string): { name: string; scalar: number | undefined } | undefined {
  if (node.inputs.length !== 2) return undefined;
  const other = node.inputs[0] === name ? node.inputs[1] : node.inputs[1] === name ? node.inputs[0] : undefined;
  return other === undefined ? undefined : { name: other, scalar: scalarValue(graph, other) };
}

/** The affine block `mul` starts, x · s → + b with stored scalars s and b, where the Add alone reads the Mul. */
function affineBlockFrom(
  graph: OnnxGraph,
  readers: Map<string, GraphNode[]>,
  mul: GraphNode,
): { x: string; scale: number; shift: number; add: GraphNode } | undefined {
  if (mul.opType !== 'Mul' || mul.inputs.length !== 2 || mul.outputs.length !== 1) return undefined;
  const scaleIndex = mul.inputs.findIndex((name) => scalarValue(graph, name) !== undefined);
  if (scaleIndex < 0) return undefined;
  const scale = scalarValue(graph, mul.inputs[scaleIndex] as string) as number;
  const x = mul.inputs[1 - scaleIndex] as string;
  const add = onlyReader(graph, readers, mul.outputs[0] as string, 'Add');
  const shift = add && otherOperand(graph, add, mul.outputs[0] as string)?.scalar;
  return add && shift !== undefined ? { x, scale, shift, add } : undefined;
}

function removeNodes(graph: OnnxGraph, removed: ReadonlySet<GraphNode>): void {
  graph.nodes = graph.nodes.filter((node) => !removed.has(node));
}

function foldAffineIntoConvolutions(graph: OnnxGraph): number {
  const readers = readersOf(graph);
  const removed = new Set<GraphNode>();
  for (const conv of graph.nodes) {
    if (conv.opType !== 'Conv' || conv.inputs.length < 2 || conv.outputs.length !== 1) continue;
    const convOutput = conv.outputs[0] as string;
    const mul = onlyReader(graph, readers, convOutput, 'Mul');
    const scale = mul && otherOperand(graph, mul, convOutput)?.scalar;
    if (!mul || scale === undefined) continue;
    const add = onlyReader(graph, readers, mul.outputs[0] as string, 'Add');
    const shift = add && otherOperand(graph, add, mul.outputs[0] as string)?.scalar;
    if (!add || shift === undefined) continue;
    const weights = graph.tensor(conv.inputs[1] as string);
    if (!weights || weights.dims.length < 3) continue;
    const channels = weights.dims[0] as number;
    const bias = conv.inputs[2] ? graph.tensor(conv.inputs[2]) : { dims: [channels], values: new Float32Array(channels) };
    if (!bias || bias.values.length !== channels) continue;
    const scaledWeights: FloatTensor = { dims: weights.dims, values: weights.values.map((value) => value * scale) };
    const shiftedBias: FloatTensor = { dims: [channels], values: bias.values.map((value) => value * scale + shift) };
    conv.inputs = [
      conv.inputs[0] as string,
      graph.addInitializer(`${convOutput}_fused_weights`, scaledWeights),
      graph.addInitializer(`${convOutput}_fused_bias`, shiftedBias),
    ];
    conv.outputs = [...add.outputs];
    removed.add(mul).add(add);
  }
  removeNodes(graph, removed);
  return removed.size / 2;
}

/** Whether a convolution is pointwise: stored 1 × 1 weights, one group, no padding. */
function isPointwise(graph: OnnxGraph, conv: GraphNode): boolean {
  const weights = conv.inputs[1] ? graph.tensor(conv.inputs[1]) : undefined;
  if (weights?.dims.length !== 4 || weights.dims[2] !== 1 || weights.dims[3] !== 1) return false;
  const autoPad = conv.stringAttribute('auto_pad');
  return (
    (conv.intAttribute('group') ?? 1) === 1 &&
    (conv.intsAttribute('pads') ?? []).every((pad) => pad === 0) &&
    (autoPad === undefined || autoPad === 'NOTSET' || autoPad === 'VALID')
  );
}

function foldAffineIntoPointwise(graph: OnnxGraph): number {
  const readers = readersOf(graph);
  const removed = new Set<GraphNode>();
  for (const mul of graph.nodes) {
    const block = affineBlockFrom(graph, readers, mul);
    if (!block) continue;
    const { x, scale, shift, add } = block;
    const conv = onlyReader(graph, readers, add.outputs[0] as string, 'Conv');
    if (!conv || conv.inputs[0] !== add.outputs[0] || !isPointwise(graph, conv)) continue;
    const weights = graph.tensor(conv.inputs[1] as string) as FloatTensor;
    const [outputs, inputs] = weights.dims as [number, number];
    const bias = conv.inputs[2] ? graph.tensor(conv.inputs[2]) : { dims: [outputs], values: new Float32Array(outputs) };
    if (!bias || bias.values.length !== outputs) continue;
    const shiftedBias = new Float32Array(outputs);
    for (let o = 0; o < outputs; o += 1) {
      let sum = 0;
      for (let i = 0; i < inputs; i += 1) sum += weights.values[o * inputs + i] as number;
      shiftedBias[o] = (bias.values[o] as number) + shift * sum;
    }
    const name = conv.outputs[0] as string;
    conv.inputs = [
      x,
      graph.addInitializer(`${name}_input_affine_weights`, { dims: weights.dims, values: weights.values.map((value) => value * scale) }),
      graph.addInitializer(`${name}_input_affine_bias`, { dims: [outputs], values: shiftedBias }),
    ];
    removed.add(mul).add(add);
  }
  removeNodes(graph, removed);
  return removed.size / 2;
}

/** Clip's bounds: attributes before opset 11, inputs from it. */
function clipBounds(graph: OnnxGraph, clip: GraphNode): { min: number | undefined; max: number | undefined } {
  if (clip.inputs.length === 1) return { min: clip.floatAttribute('min'), max: clip.floatAttribute('max') };
  const bound = (name: string | undefined) => (name ? scalarValue(graph, name) : undefined);
  return { min: bound(clip.inputs[1]), max: bound(clip.inputs[2]) };
}

function fuseHardSwish(graph: OnnxGraph): number {
  const readers = readersOf(graph);
  const removed = new Set<GraphNode>();
  let fused = 0;
  for (const add of graph.nodes) {
    if (add.opType !== 'Add' || add.inputs.length !== 2 || removed.has(add)) continue;
    const three = add.inputs.findIndex((name) => scalarValue(graph, name) === 3);
    if (three < 0) continue;
    const x = add.inputs[1 - three] as string;
    const clip = onlyReader(graph, readers, add.outputs[0] as string, 'Clip');
    if (!clip || clip.inputs[0] !== add.outputs[0]) continue;
    const { min, max } = clipBounds(graph, clip);
    if (min !== 0 || max !== 6) continue;
    const mul = onlyReader(graph, readers, clip.outputs[0] as string, 'Mul');
    if (!mul || otherOperand(graph, mul, clip.outputs[0] as string)?.name !== x) continue;
    const div = onlyReader(graph, readers, mul.outputs[0] as string, 'Div');
    if (!div || div.inputs[0] !== mul.outputs[0] || scalarValue(graph, div.inputs[1] as string) !== 6) continue;
    const hardSigmoid = GraphNode.create('HardSigmoid', [x], add.outputs);
    hardSigmoid.setFloatAttribute('alpha', 1 / 6);
    hardSigmoid.setFloatAttribute('beta', 0.5);
    graph.nodes[graph.nodes.indexOf(add)] = hardSigmoid;
    mul.inputs = [x, hardSigmoid.outputs[0] as string];
    mul.outputs = [...div.outputs];
    removed.add(clip).add(div);
    fused += 1;
  }
  removeNodes(graph, removed);
  return fused;
}

/**
 * The channel count of a tensor made from a convolution's output by operators that keep its shape
 * (activations, a batch norm, x · HardSigmoid(x)); undefined when the walk meets anything else.
 */
function channelsOf(graph: OnnxGraph, name: string): number | undefined {
  let current = name;
  for (let step = 0; step < 8; step += 1) {
    const node = graph.producer(current);
    if (!node) return undefined;
    if (node.opType === 'Conv') return graph.tensor(node.inputs[1] as string)?.dims[0];
    if (['HardSigmoid', 'Relu', 'Clip', 'BatchNormalization', 'Sigmoid', 'HardSwish'].includes(node.opType))
      current = node.inputs[0] as string;
    else if (node.opType === 'Mul' && node.inputs.length === 2) {
      // x · f(x) with f elementwise: follow x
      const [a, b] = node.inputs as [string, string];
      const gate = graph.producer(b);
      if (!gate || !['HardSigmoid', 'Sigmoid'].includes(gate.opType) || gate.inputs[0] !== a) return undefined;
      current = a;
    } else return undefined;
  }
  return undefined;
}

function affineAsBatchNorm(graph: OnnxGraph): number {
  const readers = readersOf(graph);
  const removed = new Set<GraphNode>();
  let fused = 0;
  for (const mul of [...graph.nodes]) {
    if (removed.has(mul)) continue;
    const block = affineBlockFrom(graph, readers, mul);
    if (!block) continue;
    const { x, scale, shift, add } = block;
    const channels = channelsOf(graph, x);
    if (!channels) continue;
    const vector = (value: number): FloatTensor => ({ dims: [channels], values: new Float32Array(channels).fill(value) });
    const base = add.outputs[0] as string;
    const batchNorm = GraphNode.create(
      'BatchNormalization',
      [
        x,
        graph.addInitializer(`${base}_affine_scale`, vector(scale)),
        graph.addInitializer(`${base}_affine_bias`, vector(shift)),
        graph.addInitializer(`${base}_affine_mean`, vector(0)),
        graph.addInitializer(`${base}_affine_variance`, vector(1)),
      ],
      add.outputs,
    );
    batchNorm.setFloatAttribute('epsilon', 0);
    graph.nodes[graph.nodes.indexOf(mul)] = batchNorm;
    removed.add(add);
    fused += 1;
  }
  removeNodes(graph, removed);
  return fused;
}
