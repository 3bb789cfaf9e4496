// Protocol Buffers at the wire level: a message as its list of fields, each kept as the bytes it
// was written with, so that a message can be edited field by field and written back with
// everything it was not asked about unchanged (onnx-graph.ts edits ONNX model files this way).
// https://protobuf.dev/programming-guides/encoding/

export const WireType = { varint: 0, fixed64: 1, bytes: 2, fixed32: 5 } as const;
type WireTypeNumber = (typeof WireType)[keyof typeof WireType];

/** One field of a message: its number, wire type and payload (the varint's bytes, or the length-delimited content). */
export interface WireField {
  readonly field: number;
  readonly wire: WireTypeNumber;
  readonly payload: Uint8Array;
}

export class WireFormatError extends Error {}

/** Reads a varint at `offset`: its value (exact up to 2^53) and the offset after it. */
export function readVarint(bytes: Uint8Array, offset: number): { value: number; next: number } {
  let value = 0;
  let place = 1;
  for (let at = offset; at < bytes.length && at < offset + 10; at += 1) {
    const byte = bytes[at] as number;
    value += (byte & 0x7f) * place;
    if (byte < 0x80) return { value, next: at + 1 };
    place *= 128;
  }
  throw new WireFormatError(`a varint at byte ${offset} does not end`);
}

export function writeVarint(value: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0) throw new WireFormatError(`cannot write ${value} as a varint`);
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Uint8Array.from(bytes);
}

/** The fields of one message, in the order they were written. */
export function decodeMessage(bytes: Uint8Array): WireField[] {
  const fields: WireField[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const key = readVarint(bytes, offset);
    const field = Math.floor(key.value / 8);
    const wire = key.value % 8;
    offset = key.next;
    let end: number;
    let start = offset;
    switch (wire) {
      case WireType.varint:
        end = readVarint(bytes, offset).next;
        break;
      case WireType.fixed64:
        end = offset + 8;
        break;
      case WireType.fixed32:
        end = offset + 4;
        break;
      case WireType.bytes: {
        const length = readVarint(bytes, offset);
        start = length.next;
        end = start + length.value;
        break;
      }
      default:
        throw new WireFormatError(`field ${field} has wire type ${wire}, which this reader does not take (groups are not used by ONNX)`);
    }
    if (end > bytes.length || field === 0) throw new WireFormatError(`field ${field} runs past the message's end`);
    fields.push({ field, wire: wire as WireTypeNumber, payload: bytes.subarray(start, end) });
    offset = end;
  }
  return fields;
}

export function encodeMessage(fields: readonly WireField[]): Uint8Array {
  const keys = fields.map(({ field, wire }) => writeVarint(field * 8 + wire));
  const lengths = fields.map(({ wire, payload }) => (wire === WireType.bytes ? writeVarint(payload.length) : EMPTY));
  let size = 0;
  fields.forEach((entry, i) => {
    size += (keys[i] as Uint8Array).length + (lengths[i] as Uint8Array).length + entry.payload.length;
  });
  const out = new Uint8Array(size);
  let offset = 0;
  fields.forEach((entry, i) => {
    for (const part of [keys[i] as Uint8Array, lengths[i] as Uint8Array, entry.payload]) {
      out.set(part, offset);
      offset += part.length;
    }
  });
  return out;
}

const EMPTY = new Uint8Array(0);

const utf8 = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

export const stringField = (field: number, text: string): WireField => ({ field, wire: WireType.bytes, payload: utf8Encoder.encode(text) });
export const bytesField = (field: number, payload: Uint8Array): WireField => ({ field, wire: WireType.bytes, payload });
export const varintField = (field: number, value: number): WireField => ({ field, wire: WireType.varint, payload: writeVarint(value) });
export function float32Field(field: number, value: number): WireField {
  const payload = new Uint8Array(4);
  new DataView(payload.buffer).setFloat32(0, value, true);
  return { field, wire: WireType.fixed32, payload };
}

export const textOf = (payload: Uint8Array): string => utf8.decode(payload);
export const varintOf = (payload: Uint8Array): number => readVarint(payload, 0).value;
export const float32Of = (payload: Uint8Array): number => new DataView(payload.buffer, payload.byteOffset, 4).getFloat32(0, true);

/** The values of a repeated varint field, whether written packed (one length-delimited run) or one field each. */
export function repeatedVarints(fields: readonly WireField[], field: number): number[] {
  const values: number[] = [];
  for (const entry of fields) {
    if (entry.field !== field) continue;
    if (entry.wire === WireType.varint) values.push(varintOf(entry.payload));
    else
      for (let offset = 0; offset < entry.payload.length; ) {
        const { value, next } = readVarint(entry.payload, offset);
        values.push(value);
        offset = next;
      }
  }
  return values;
}
