// Decodes a JPEG 2000 image (JP2 file or bare codestream) with OpenJPEG compiled to WebAssembly
// (@cornerstonejs/codec-openjpeg), into interleaved 8- or 16-bit samples that sharp takes as raw
// input, on the thread that calls it: jpeg2000-decode.ts calls it in a thread of its own.
import { createRequire } from 'node:module';

export interface DecodedJpeg2000 {
  /** Interleaved samples, row by row: Uint8Array for depth 8, Uint16Array for depth 16. */
  data: Uint8Array | Uint16Array;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
  depth: 8 | 16;
}

export class Jpeg2000DecodeError extends Error {
  override name = 'Jpeg2000DecodeError';
}

interface FrameInfo {
  width: number;
  height: number;
  bitsPerSample: number;
  componentCount: number;
  isSigned: boolean;
}

interface J2KDecoder {
  getEncodedBuffer(length: number): Uint8Array;
  decode(): void;
  getFrameInfo(): FrameInfo;
  getDecodedBuffer(): Uint8Array;
  getColorSpace(): number;
  delete(): void;
}

interface OpenJpegModule {
  J2KDecoder: new () => J2KDecoder;
}

type OpenJpegFactory = (options: { print(text: string): void; printErr(text: string): void }) => Promise<OpenJpegModule>;

const require = createRequire(import.meta.url);
const openJpeg = require('@cornerstonejs/codec-openjpeg/decodewasmjs') as OpenJpegFactory;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** OpenJPEG's OPJ_COLOR_SPACE values that the decoder reports. */
const OPENJPEG_COLOUR_SPACES: Record<number, string> = { 3: 'sYCC', 4: 'e-YCC', 5: 'CMYK' };

export async function decodeInThisThread(bytes: Uint8Array): Promise<DecodedJpeg2000> {
  // OpenJPEG reports its progress on stdout; the service's stdout is its JSON log. Its errors
  // ("[ERROR] …") are kept to say why a decode failed.
  const errors: string[] = [];
  const module = await openJpeg({
    print() {},
    printErr(text) {
      if (errors.length < 5) errors.push(text.replace(/^\[ERROR\]\s*/, '').trim());
    },
  });
  const decoder = new module.J2KDecoder();
  try {
    decoder.getEncodedBuffer(bytes.length).set(bytes);
    try {
      decoder.decode();
    } catch (error) {
      // A C++ exception reaches JavaScript as a bare pointer: only OpenJPEG's own messages say anything.
      const thrown = error instanceof Error ? error.message : 'it stopped with an internal exception';
      throw new Jpeg2000DecodeError(`OpenJPEG failed (${[...errors, thrown].join('; ')})`);
    }
    const frame = decoder.getFrameInfo();
    if (frame.width <= 0 || frame.height <= 0) throw new Jpeg2000DecodeError('OpenJPEG could not decode the codestream');
    const colourSpace = OPENJPEG_COLOUR_SPACES[decoder.getColorSpace()];
    if (colourSpace) throw new Jpeg2000DecodeError(`the ${colourSpace} colour space is not supported; convert the image to RGB or grey`);
    const channels = frame.componentCount;
    if (channels < 1 || channels > 4) throw new Jpeg2000DecodeError(`${channels} components; a page image has 1 to 4`);
    if (frame.bitsPerSample < 1 || frame.bitsPerSample > 16)
      throw new Jpeg2000DecodeError(`${frame.bitsPerSample} bits a sample; at most 16 are supported`);
    const decoded = decoder.getDecodedBuffer();
    const samples = frame.width * frame.height * channels;
    const wide = frame.bitsPerSample > 8;
    if (decoded.length !== samples * (wide ? 2 : 1))
      throw new Jpeg2000DecodeError(`OpenJPEG gave ${decoded.length} bytes for ${samples} samples`);
    return {
      data: wide ? toFullRange16(decoded, samples, frame) : toFullRange8(decoded, frame),
      width: frame.width,
      height: frame.height,
      channels: channels as DecodedJpeg2000['channels'],
      depth: wide ? 16 : 8,
    };
  } finally {
    decoder.delete();
  }
}

/** The samples as unsigned 0..255: signed ones offset, fewer than 8 bits stretched (a 1-bit page to 0 and 255). */
function toFullRange8(decoded: Uint8Array, frame: FrameInfo): Uint8Array {
  if (frame.bitsPerSample === 8 && !frame.isSigned) return decoded.slice();
  const out = new Uint8Array(decoded.length);
  const bits = frame.bitsPerSample;
  const offset = frame.isSigned ? 1 << (bits - 1) : 0;
  const max = (1 << bits) - 1;
  const signed = new Int8Array(decoded.buffer, decoded.byteOffset, decoded.length);
  for (let i = 0; i < decoded.length; i += 1) {
    const value = (frame.isSigned ? signed[i] : decoded[i]) + offset;
    out[i] = bits === 8 ? value : Math.round((Math.min(Math.max(value, 0), max) * 255) / max);
  }
  return out;
}

/** The samples as unsigned 0..65535 (the decoder gives little-endian 16-bit words). */
function toFullRange16(decoded: Uint8Array, samples: number, frame: FrameInfo): Uint16Array {
  if (frame.bitsPerSample === 16 && !frame.isSigned && LITTLE_ENDIAN) return new Uint16Array(decoded.slice().buffer);
  const view = new DataView(decoded.buffer, decoded.byteOffset, decoded.byteLength);
  const out = new Uint16Array(samples);
  const bits = frame.bitsPerSample;
  const offset = frame.isSigned ? 1 << (bits - 1) : 0;
  const max = 2 ** bits - 1;
  for (let i = 0; i < samples; i += 1) {
    const value = (frame.isSigned ? view.getInt16(2 * i, true) : view.getUint16(2 * i, true)) + offset;
    out[i] = bits === 16 ? value : Math.round((Math.min(Math.max(value, 0), max) * 65535) / max);
  }
  return out;
}
