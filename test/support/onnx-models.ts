// Hand-built ONNX models for the graph rewrite tests (src/recognition/models/graph/), written with
// the same protobuf wire codec the rewrites use. Field numbers: onnx/onnx.proto.
import {
  bytesField,
  encodeMessage,
  float32Field,
  stringField,
  varintField,
  type WireField,
} from '../../src/recognition/models/graph/protobuf-wire.ts';

const TENSOR_FLOAT = 1;
const ATTRIBUTE_FLOAT = 1;
const ATTRIBUTE_INTS = 7;

/** A float32 initializer (GraphProto field 5). */
export function floatInitializer(name: string, dims: number[], values: number[]): WireField {
  const raw = new Uint8Array(values.length * 4);
  values.forEach((value, i) => new DataView(raw.buffer).setFloat32(i * 4, value, true));
  return bytesField(
    5,
    encodeMessage([...dims.map((dim) => varintField(1, dim)), varintField(2, TENSOR_FLOAT), stringField(8, name), bytesField(9, raw)]),
  );
}

/** A node (GraphProto field 1) of the default domain. */
export function nodeField(op: string, inputs: string[], outputs: string[], attributes: WireField[] = []): WireField {
  return bytesField(
    1,
    encodeMessage([
      ...inputs.map((name) => stringField(1, name)),
      ...outputs.map((name) => stringField(2, name)),
      stringField(4, op),
      ...attributes,
    ]),
  );
}

export function floatAttribute(name: string, value: number): WireField {
  return bytesField(5, encodeMessage([stringField(1, name), float32Field(2, value), varintField(20, ATTRIBUTE_FLOAT)]));
}

export function intsAttribute(name: string, values: number[]): WireField {
  return bytesField(
    5,
    encodeMessage([stringField(1, name), ...values.map((value) => varintField(8, value)), varintField(20, ATTRIBUTE_INTS)]),
  );
}

/** A float32 graph input (field 11) or output (field 12) of these dimensions. */
export function valueInfo(field: 11 | 12, name: string, dims: number[]): WireField {
  const shape = encodeMessage(dims.map((dim) => bytesField(1, encodeMessage([varintField(1, dim)]))));
  const tensorType = encodeMessage([varintField(1, TENSOR_FLOAT), bytesField(2, shape)]);
  return bytesField(field, encodeMessage([stringField(1, name), bytesField(2, encodeMessage([bytesField(1, tensorType)]))]));
}

/** A model (IR version 7) of these graph fields, importing the default domain at `opset`. */
export function modelOf(graph: WireField[], opset: number): Uint8Array {
  return encodeMessage([varintField(1, 7), bytesField(7, encodeMessage(graph)), bytesField(8, encodeMessage([varintField(2, opset)]))]);
}
