// Cuts a recognizer's output down to the classes its decoding may choose, inside the graph: a
// Gather over the class axis after the model's last operator. PP-OCRv4 read with `restrictTo:
// "latin"` may choose 195 of its 6 625 classes; its output of probabilities (a softmax in the
// graph) was 26 kB a frame, about 3 MB a printed line, copied out of onnxruntime, handed to the
// main thread and scanned class by class for every frame. The kept classes' probabilities are the
// same numbers, so every reading and confidence is the same to the bit (docs/recognition.md,
// "Model graphs rewritten at load"). Only for outputs of probabilities: cutting logits would change
// the softmax a decoder computes over them.
import { GraphNode, OnnxGraph, OnnxGraphError } from './onnx-graph.ts';

/** The class axis of a recognizer's output ([N, T, C] or [T, N, C]): the last. */
const CLASS_AXIS = 2;

/** The model with its single output cut to `classes` (ascending class indices), in that order. */
export function keepOutputClasses(bytes: Uint8Array, classes: readonly number[]): Uint8Array {
  const graph = OnnxGraph.decode(bytes);
  cutOutputClasses(graph, classes);
  return graph.encode();
}

/** keepOutputClasses on a decoded graph, in place. */
export function cutOutputClasses(graph: OnnxGraph, classes: readonly number[]): void {
  const outputs = graph.outputNames();
  if (outputs.length !== 1)
    throw new OnnxGraphError(`the model has ${outputs.length} outputs; its classes can be cut only where it has one`);
  const output = outputs[0] as string;
  const producer = graph.producer(output);
  if (!producer) throw new OnnxGraphError(`no operator writes the model's output ${output}`);
  const all = graph.newName(`${output}.all_classes`);
  for (const node of graph.nodes) {
    node.outputs = node.outputs.map((name) => (name === output ? all : name));
    node.inputs = node.inputs.map((name) => (name === output ? all : name));
  }
  const gather = GraphNode.create('Gather', [all, graph.addIndices(`${output}.kept_classes`, classes)], [output]);
  gather.setIntAttribute('axis', CLASS_AXIS);
  graph.nodes.push(gather);
  graph.forgetOutputShape(output);
}
