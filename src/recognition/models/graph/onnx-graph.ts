// An ONNX model's graph as nodes that can be rewritten (fuse-elementwise.ts), read from and
// written back to the model file's bytes. Only what a rewrite needs is decoded: each node's
// inputs, outputs and operator, attributes by name, and float tensors (constants and
// initializers); every other field of the model, graph and nodes is written back as it came.
// Field numbers: onnx/onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto).
import {
  bytesField,
  decodeMessage,
  encodeMessage,
  float32Field,
  float32Of,
  repeatedVarints,
  stringField,
  textOf,
  varintField,
  varintOf,
  WireFormatError,
  WireType,
  type WireField,
} from './protobuf-wire.ts';

const MODEL_GRAPH = 7;
const MODEL_OPSET_IMPORT = 8;
const OPSET_DOMAIN = 1;
const OPSET_VERSION = 2;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_OP_TYPE = 4;
const NODE_ATTRIBUTE = 5;
const NODE_DOMAIN = 7;
const ATTRIBUTE_NAME = 1;
const ATTRIBUTE_FLOAT = 2;
const ATTRIBUTE_INT = 3;
const ATTRIBUTE_STRING = 4;
const ATTRIBUTE_TENSOR = 5;
const ATTRIBUTE_INTS = 8;
const ATTRIBUTE_TYPE = 20;
const ATTRIBUTE_TYPE_FLOAT = 1;
const ATTRIBUTE_TYPE_INT = 2;
const ATTRIBUTE_TYPE_INTS = 7;
const TENSOR_DIMS = 1;
const TENSOR_DATA_TYPE = 2;
const TENSOR_FLOAT_DATA = 4;
const TENSOR_NAME = 8;
const TENSOR_RAW_DATA = 9;
const TENSOR_DATA_LOCATION = 14;
const DATA_TYPE_FLOAT = 1;
const DATA_TYPE_INT64 = 7;
const VALUE_INFO_NAME = 1;
const VALUE_INFO_TYPE = 2;
const TYPE_TENSOR = 1;
const TENSOR_TYPE_ELEM_TYPE = 1;

export class OnnxGraphError extends Error {}

/** A float32 tensor held in the model (a Constant node's value or an initializer). */
export interface FloatTensor {
  readonly dims: readonly number[];
  readonly values: Float32Array;
}

/** One node: operator, inputs and outputs by name, attributes and any other field as written. */
export class GraphNode {
  opType: string;
  inputs: string[];
  outputs: string[];
  private attributes: WireField[];
  private readonly rest: WireField[];
  /** The bytes the node was read from and what they said, written back as they were while unchanged. */
  private readonly original: { bytes: Uint8Array; signature: string } | null;
  private attributesChanged = false;

  /** `bytes`: a NodeProto as the file has it; none for a new node. */
  constructor(bytes?: Uint8Array) {
    const fields = bytes ? decodeMessage(bytes) : [];
    this.inputs = [];
    this.outputs = [];
    this.attributes = [];
    this.rest = [];
    this.opType = '';
    let domain = '';
    for (const entry of fields) {
      if (entry.field === NODE_INPUT) this.inputs.push(textOf(entry.payload));
      else if (entry.field === NODE_OUTPUT) this.outputs.push(textOf(entry.payload));
      else if (entry.field === NODE_OP_TYPE) this.opType = textOf(entry.payload);
      else if (entry.field === NODE_ATTRIBUTE) this.attributes.push(entry);
      else {
        if (entry.field === NODE_DOMAIN) domain = textOf(entry.payload);
        this.rest.push(entry);
      }
    }
    // Rewrites match operators of the default ONNX domain only.
    if (domain !== '' && domain !== 'ai.onnx') this.opType = `${domain}::${this.opType}`;
    this.original = bytes ? { bytes, signature: this.signature() } : null;
  }

  private signature(): string {
    return JSON.stringify([this.opType, this.inputs, this.outputs]);
  }

  /** A new node; `domain` for an operator outside the default ONNX domain (the graph must import it: OnnxGraph.importOpset). */
  static create(opType: string, inputs: readonly string[], outputs: readonly string[], domain?: string): GraphNode {
    const node = new GraphNode();
    node.opType = domain ? `${domain}::${opType}` : opType;
    node.inputs = [...inputs];
    node.outputs = [...outputs];
    if (domain) node.rest.push(stringField(NODE_DOMAIN, domain));
    return node;
  }

  /** The attribute's fields by name, or undefined. */
  private attribute(name: string): WireField[] | undefined {
    for (const entry of this.attributes) {
      const fields = decodeMessage(entry.payload);
      const named = fields.find((field) => field.field === ATTRIBUTE_NAME);
      if (named && textOf(named.payload) === name) return fields;
    }
    return undefined;
  }

  floatAttribute(name: string): number | undefined {
    const value = this.attribute(name)?.find((field) => field.field === ATTRIBUTE_FLOAT);
    return value ? float32Of(value.payload) : undefined;
  }

  intAttribute(name: string): number | undefined {
    const value = this.attribute(name)?.find((field) => field.field === ATTRIBUTE_INT);
    return value ? varintOf(value.payload) : undefined;
  }

  /** A list of ints (a convolution's kernel_shape, pads, strides); undefined when the node has no such attribute. */
  intsAttribute(name: string): number[] | undefined {
    const fields = this.attribute(name);
    return fields ? repeatedVarints(fields, ATTRIBUTE_INTS) : undefined;
  }

  stringAttribute(name: string): string | undefined {
    const value = this.attribute(name)?.find((field) => field.field === ATTRIBUTE_STRING);
    return value ? textOf(value.payload) : undefined;
  }

  /** The Constant node's tensor, when it is a float tensor stored in the file. */
  constantValue(): FloatTensor | undefined {
    if (this.opType !== 'Constant') return undefined;
    const tensor = this.attribute('value')?.find((field) => field.field === ATTRIBUTE_TENSOR);
    return tensor ? decodeFloatTensor(decodeMessage(tensor.payload)) : undefined;
  }

  setFloatAttribute(name: string, value: number): void {
    this.setAttribute(name, float32Field(ATTRIBUTE_FLOAT, value), ATTRIBUTE_TYPE_FLOAT);
  }

  setIntAttribute(name: string, value: number): void {
    this.setAttribute(name, varintField(ATTRIBUTE_INT, value), ATTRIBUTE_TYPE_INT);
  }

  setIntsAttribute(name: string, values: readonly number[]): void {
    this.setAttribute(
      name,
      values.map((value) => varintField(ATTRIBUTE_INTS, value)),
      ATTRIBUTE_TYPE_INTS,
    );
  }

  /** Sets attribute `name` to the value fields of its type, replacing any attribute of that name. */
  private setAttribute(name: string, value: WireField | WireField[], type: number): void {
    this.attributesChanged = true;
    this.attributes = this.attributes.filter((entry) => !hasName(decodeMessage(entry.payload), name));
    const values = Array.isArray(value) ? value : [value];
    this.attributes.push(
      bytesField(NODE_ATTRIBUTE, encodeMessage([stringField(ATTRIBUTE_NAME, name), ...values, varintField(ATTRIBUTE_TYPE, type)])),
    );
  }

  encode(): Uint8Array {
    if (this.original && !this.attributesChanged && this.signature() === this.original.signature) return this.original.bytes;
    return encodeMessage([
      ...this.inputs.map((name) => stringField(NODE_INPUT, name)),
      ...this.outputs.map((name) => stringField(NODE_OUTPUT, name)),
      stringField(NODE_OP_TYPE, this.opType.includes('::') ? (this.opType.split('::')[1] as string) : this.opType),
      ...this.attributes,
      ...this.rest,
    ]);
  }
}

const hasName = (fields: readonly WireField[], name: string): boolean =>
  fields.some((field) => field.field === ATTRIBUTE_NAME && textOf(field.payload) === name);

function decodeFloatTensor(fields: readonly WireField[]): FloatTensor | undefined {
  const type = fields.find((field) => field.field === TENSOR_DATA_TYPE);
  if (!type || varintOf(type.payload) !== DATA_TYPE_FLOAT) return undefined;
  if (fields.some((field) => field.field === TENSOR_DATA_LOCATION && varintOf(field.payload) !== 0)) return undefined;
  const dims = repeatedVarints(fields, TENSOR_DIMS);
  const count = dims.reduce((product, dim) => product * dim, 1);
  const raw = fields.find((field) => field.field === TENSOR_RAW_DATA);
  let values: Float32Array;
  if (raw) {
    if (raw.payload.length !== count * 4) return undefined;
    values = new Float32Array(count);
    const view = new DataView(raw.payload.buffer, raw.payload.byteOffset, raw.payload.length);
    for (let i = 0; i < count; i += 1) values[i] = view.getFloat32(i * 4, true);
  } else {
    const floats: number[] = [];
    for (const field of fields) {
      if (field.field !== TENSOR_FLOAT_DATA) continue;
      if (field.wire === WireType.fixed32) floats.push(float32Of(field.payload));
      else for (let at = 0; at + 4 <= field.payload.length; at += 4) floats.push(float32Of(field.payload.subarray(at)));
    }
    if (floats.length !== count) return undefined;
    values = Float32Array.from(floats);
  }
  return { dims, values };
}

/** ONNX stores raw tensor data little-endian. */
const LITTLE_ENDIAN = new Uint8Array(Float32Array.of(1).buffer)[3] === 0x3f;

function encodeFloatTensor(name: string, tensor: FloatTensor): Uint8Array {
  const raw = new Uint8Array(tensor.values.length * 4);
  if (LITTLE_ENDIAN) raw.set(new Uint8Array(tensor.values.buffer, tensor.values.byteOffset, raw.length));
  else {
    const view = new DataView(raw.buffer);
    tensor.values.forEach((value, i) => view.setFloat32(i * 4, value, true));
  }
  return encodeMessage([
    ...tensor.dims.map((dim) => varintField(TENSOR_DIMS, dim)),
    varintField(TENSOR_DATA_TYPE, DATA_TYPE_FLOAT),
    stringField(TENSOR_NAME, name),
    bytesField(TENSOR_RAW_DATA, raw),
  ]);
}

/** A 1-D int64 tensor (indices), little-endian raw data as ONNX stores it. */
function encodeInt64Tensor(name: string, values: readonly number[]): Uint8Array {
  const raw = new Uint8Array(values.length * 8);
  const view = new DataView(raw.buffer);
  values.forEach((value, i) => view.setBigInt64(i * 8, BigInt(value), true));
  return encodeMessage([
    varintField(TENSOR_DIMS, values.length),
    varintField(TENSOR_DATA_TYPE, DATA_TYPE_INT64),
    stringField(TENSOR_NAME, name),
    bytesField(TENSOR_RAW_DATA, raw),
  ]);
}

/** A model file's graph: its nodes in order, the float tensors by name, and the names of its outputs. */
export class OnnxGraph {
  nodes: GraphNode[];
  readonly outputs: ReadonlySet<string>;
  private readonly modelFields: WireField[];
  private graphFields: WireField[];
  private readonly initializers = new Map<string, FloatTensor | undefined>();
  private readonly added = new Map<string, FloatTensor>();
  private readonly addedIndices = new Map<string, readonly number[]>();
  /** Every tensor name the file uses, so that an added initializer takes a new one. */
  private readonly names = new Set<string>();

  private constructor(modelFields: WireField[], graphFields: WireField[]) {
    this.modelFields = modelFields;
    this.graphFields = graphFields.filter((field) => field.field !== GRAPH_NODE);
    this.nodes = graphFields.filter((field) => field.field === GRAPH_NODE).map((field) => new GraphNode(field.payload));
    const outputs = new Set<string>();
    for (const field of graphFields) {
      if (field.field === GRAPH_OUTPUT) {
        const name = decodeMessage(field.payload).find((entry) => entry.field === VALUE_INFO_NAME);
        if (name) outputs.add(textOf(name.payload));
      } else if (field.field === GRAPH_INITIALIZER) {
        const tensor = decodeMessage(field.payload);
        const name = tensor.find((entry) => entry.field === TENSOR_NAME);
        if (name) this.initializers.set(textOf(name.payload), decodeFloatTensor(tensor));
      }
    }
    this.outputs = outputs;
    for (const node of this.nodes) for (const name of [...node.inputs, ...node.outputs]) this.names.add(name);
    for (const name of this.initializers.keys()) this.names.add(name);
  }

  static decode(bytes: Uint8Array): OnnxGraph {
    try {
      const model = decodeMessage(bytes);
      const graphs = model.filter((field) => field.field === MODEL_GRAPH && field.wire === WireType.bytes);
      if (graphs.length !== 1) throw new OnnxGraphError('the file has no single graph');
      return new OnnxGraph(model, decodeMessage((graphs[0] as WireField).payload));
    } catch (error) {
      if (error instanceof WireFormatError) throw new OnnxGraphError(`not an ONNX model: ${error.message}`);
      throw error;
    }
  }

  /** The float tensor a name stands for: an initializer, a Constant node's value, or one added here. */
  tensor(name: string): FloatTensor | undefined {
    const added = this.added.get(name);
    if (added) return added;
    if (this.initializers.has(name)) return this.initializers.get(name);
    return this.producer(name)?.constantValue();
  }

  producer(name: string): GraphNode | undefined {
    return this.nodes.find((node) => node.outputs.includes(name));
  }

  /** Adds a float initializer under a name no node or tensor uses yet, and returns that name. */
  addInitializer(wanted: string, tensor: FloatTensor): string {
    const name = this.newName(wanted);
    this.added.set(name, tensor);
    return name;
  }

  /** Adds an int64 initializer of these values (e.g. Gather's indices) under a name nothing uses yet, and returns that name. */
  addIndices(wanted: string, values: readonly number[]): string {
    const name = this.newName(wanted);
    this.addedIndices.set(name, [...values]);
    return name;
  }

  /** A tensor name no node, initializer or output uses yet, from `wanted`; reserved from now on. */
  newName(wanted: string): string {
    let name = wanted;
    for (let n = 1; this.names.has(name) || this.outputs.has(name); n += 1) name = `${wanted}_${n}`;
    this.names.add(name);
    return name;
  }

  /** The model's opset version for `domain` ('' for the default ONNX domain); 0 where it imports none. */
  opsetVersion(domain: string): number {
    for (const field of this.modelFields) {
      if (field.field !== MODEL_OPSET_IMPORT) continue;
      const entries = decodeMessage(field.payload);
      const named = entries.find((entry) => entry.field === OPSET_DOMAIN);
      const own = named ? textOf(named.payload) : '';
      const version = entries.find((entry) => entry.field === OPSET_VERSION);
      if ((own === domain || (domain === '' && own === 'ai.onnx')) && version) return varintOf(version.payload);
    }
    return 0;
  }

  /** Imports `domain` at `version` where the model imports no version of it. */
  importOpset(domain: string, version: number): void {
    if (this.opsetVersion(domain) > 0) return;
    const entry = bytesField(MODEL_OPSET_IMPORT, encodeMessage([stringField(OPSET_DOMAIN, domain), varintField(OPSET_VERSION, version)]));
    const graphAt = this.modelFields.findIndex((field) => field.field === MODEL_GRAPH);
    this.modelFields.splice(graphAt + 1, 0, entry);
  }

  /** The graph outputs' names, in the file's order. */
  outputNames(): string[] {
    return this.graphFields
      .filter((field) => field.field === GRAPH_OUTPUT)
      .map((field) => decodeMessage(field.payload).find((entry) => entry.field === VALUE_INFO_NAME))
      .map((name) => (name ? textOf(name.payload) : ''));
  }

  /** Declares output `name` a float tensor of unknown shape (after a rewrite that changes its shape). */
  forgetOutputShape(name: string): void {
    const type = encodeMessage([bytesField(TYPE_TENSOR, encodeMessage([varintField(TENSOR_TYPE_ELEM_TYPE, DATA_TYPE_FLOAT)]))]);
    this.graphFields = this.graphFields.map((field) => {
      if (field.field !== GRAPH_OUTPUT) return field;
      const named = decodeMessage(field.payload).find((entry) => entry.field === VALUE_INFO_NAME);
      if (!named || textOf(named.payload) !== name) return field;
      return bytesField(GRAPH_OUTPUT, encodeMessage([stringField(VALUE_INFO_NAME, name), bytesField(VALUE_INFO_TYPE, type)]));
    });
  }

  /** Drops Constant nodes and initializers that nothing reads any more (not those that are graph inputs too). */
  removeUnusedConstants(): void {
    const read = new Set(this.nodes.flatMap((node) => node.inputs));
    const used = (name: string): boolean => read.has(name) || this.outputs.has(name);
    this.nodes = this.nodes.filter((node) => node.opType !== 'Constant' || node.outputs.some(used));
    const inputs = new Set(
      this.graphFields
        .filter((field) => field.field === GRAPH_INPUT)
        .map((field) => decodeMessage(field.payload).find((entry) => entry.field === VALUE_INFO_NAME))
        .map((name) => (name ? textOf(name.payload) : '')),
    );
    this.graphFields = this.graphFields.filter((field) => {
      if (field.field !== GRAPH_INITIALIZER) return true;
      const name = decodeMessage(field.payload).find((entry) => entry.field === TENSOR_NAME);
      return !name || used(textOf(name.payload)) || inputs.has(textOf(name.payload));
    });
    for (const name of this.added.keys()) if (!used(name)) this.added.delete(name);
  }

  encode(): Uint8Array {
    const graph = encodeMessage([
      ...this.nodes.map((node) => bytesField(GRAPH_NODE, node.encode())),
      ...this.graphFields,
      ...[...this.added].map(([name, tensor]) => bytesField(GRAPH_INITIALIZER, encodeFloatTensor(name, tensor))),
      ...[...this.addedIndices].map(([name, values]) => bytesField(GRAPH_INITIALIZER, encodeInt64Tensor(name, values))),
    ]);
    return encodeMessage(this.modelFields.map((field) => (field.field === MODEL_GRAPH ? bytesField(MODEL_GRAPH, graph) : field)));
  }
}
