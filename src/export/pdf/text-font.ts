// The font of the invisible text layer: a subset of a TrueType font embedded as a Type0 /
// CIDFontType2 font with Identity-H encoding, where we, not the font, choose the CIDs:
// one CID per distinct Unicode code point of the recognised text.
// - ToUnicode maps each CID to exactly its code point, so text extraction returns the
//   recognised text even where the font shares one glyph between code points or lacks one.
// - A code point the font has no glyph for is drawn with a stand-in glyph (the layer is
//   invisible), never with .notdef, which PDF/A-2 forbids (ISO 19005-2, 6.2.11.8).
// - The CID→glyph map is an explicit CIDToGIDMap stream (allowed by 6.2.11.3.2).
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import fontkit from '@pdf-lib/fontkit';
import { PDFRawStream, PDFString, type PDFDict, type PDFRef } from 'pdf-lib';
import type { PdfObjectWriter } from './pdf-object-writer.ts';

type FontkitFont = ReturnType<typeof fontkit.create>;

/** Code points that must not appear in a PDF/A ToUnicode map (6.2.11.7.2); they carry no visible text. */
const UNMAPPABLE = new Set([0x0000, 0xfeff, 0xfffe, 0xffff]);

export interface EncodedText {
  /** Hex string of 2-byte CIDs for a `Tj` operator, e.g. `<00010002>`. */
  hex: string;
  /** Advance width of the text at font size 1, in text space units. */
  width: number;
  /** Number of CIDs in `hex`. */
  length: number;
}

interface CidEntry {
  codePoint: number;
  glyphId: number;
  /** Advance in 1/1000 text space units. */
  advance: number;
}

export class TextLayerFont {
  readonly ref: PDFRef;
  private readonly font: FontkitFont;
  private readonly scale: number;
  private readonly standInGlyphId: number;
  /** entries[cid - 1]; CID 0 is never used. */
  private readonly entries: CidEntry[] = [];
  private readonly cidByCodePoint = new Map<number, number>();

  constructor(fontBytes: Uint8Array, ref: PDFRef) {
    this.font = fontkit.create(fontBytes);
    if ((this.font as unknown as { directory: { tables: Record<string, unknown> } }).directory.tables.glyf === undefined) {
      throw new Error('the text layer font must have TrueType (glyf) outlines');
    }
    this.ref = ref;
    this.scale = 1000 / this.font.unitsPerEm;
    const standIn = [0xfffd, 0x3f].find((codePoint) => this.font.hasGlyphForCodePoint(codePoint));
    if (standIn === undefined) throw new Error('the text layer font has neither U+FFFD nor "?"');
    this.standInGlyphId = this.font.glyphForCodePoint(standIn).id;
  }

  /** Vertical extent of the font at size 1: ascent above and descent (negative) below the baseline. */
  get verticalMetrics(): { ascent: number; descent: number } {
    return { ascent: this.font.ascent / this.font.unitsPerEm, descent: this.font.descent / this.font.unitsPerEm };
  }

  get used(): boolean {
    return this.entries.length > 0;
  }

  encode(text: string): EncodedText {
    let hex = '';
    let advance = 0;
    let length = 0;
    for (const character of text) {
      const codePoint = character.codePointAt(0)!;
      if (UNMAPPABLE.has(codePoint)) continue;
      const cid = this.cidFor(codePoint);
      hex += cid.toString(16).padStart(4, '0');
      advance += this.entries[cid - 1].advance;
      length++;
    }
    return { hex: `<${hex.toUpperCase()}>`, width: advance / 1000, length };
  }

  private cidFor(codePoint: number): number {
    const known = this.cidByCodePoint.get(codePoint);
    if (known !== undefined) return known;
    if (this.entries.length >= 0xfffe) throw new Error('text layer font: more than 65534 distinct characters');
    const glyph = this.font.hasGlyphForCodePoint(codePoint) ? this.font.glyphForCodePoint(codePoint) : null;
    const glyphId = glyph && glyph.id !== 0 ? glyph.id : this.standInGlyphId;
    const advance = Math.round(this.font.getGlyph(glyphId).advanceWidth * this.scale);
    this.entries.push({ codePoint, glyphId, advance });
    const cid = this.entries.length;
    this.cidByCodePoint.set(codePoint, cid);
    return cid;
  }

  /** Writes the font (subset program, descriptor, widths, maps) under `ref`. */
  async embed(writer: PdfObjectWriter): Promise<void> {
    const { context } = writer;
    const subset = this.font.createSubset();
    const cidToGid = Buffer.alloc((this.entries.length + 1) * 2);
    this.entries.forEach((entry, index) => cidToGid.writeUInt16BE(subset.includeGlyph(entry.glyphId), (index + 1) * 2));
    const program = await encodeSubset(subset);

    // Subset fonts are named TAG+Name with a six-letter tag (ISO 32000-1, 9.6.4); ours is
    // derived from the characters used, so the same text gives the same bytes.
    const digest = createHash('sha256')
      .update(cidToGid)
      .update(Buffer.from(this.entries.map((entry) => entry.codePoint).join(',')))
      .digest();
    const tag = [...digest.subarray(0, 6)].map((byte) => String.fromCharCode(65 + (byte % 26))).join('');
    const baseFont = `${tag}+${(this.font.postscriptName ?? 'TextLayerFont').replace(/[^A-Za-z0-9-]/g, '')}`;

    const fontFile = await writer.add(flateStream(context, program, { Length1: program.length }));
    const bbox = this.font.bbox;
    const descriptor = await writer.add(
      context.obj({
        Type: 'FontDescriptor',
        FontName: baseFont,
        Flags: 32, // nonsymbolic
        FontBBox: [bbox.minX, bbox.minY, bbox.maxX, bbox.maxY].map((value) => Math.round(value * this.scale)),
        ItalicAngle: this.font.italicAngle,
        Ascent: Math.round(this.font.ascent * this.scale),
        Descent: Math.round(this.font.descent * this.scale),
        CapHeight: Math.round((this.font.capHeight || this.font.ascent) * this.scale),
        StemV: 80,
        FontFile2: fontFile,
      }),
    );
    const cidToGidMap = await writer.add(flateStream(context, cidToGid, {}));
    const cidFont = await writer.add(
      context.obj({
        Type: 'Font',
        Subtype: 'CIDFontType2',
        BaseFont: baseFont,
        CIDSystemInfo: { Registry: PDFString.of('Adobe'), Ordering: PDFString.of('Identity'), Supplement: 0 },
        FontDescriptor: descriptor,
        DW: 0,
        W: [1, this.entries.map((entry) => entry.advance)],
        CIDToGIDMap: cidToGidMap,
      }),
    );
    const toUnicode = await writer.add(flateStream(context, Buffer.from(this.toUnicodeCMap(), 'latin1'), {}));
    await writer.writeObject(
      this.ref,
      context.obj({
        Type: 'Font',
        Subtype: 'Type0',
        BaseFont: baseFont,
        Encoding: 'Identity-H',
        DescendantFonts: [cidFont],
        ToUnicode: toUnicode,
      }),
    );
  }

  private toUnicodeCMap(): string {
    const lines = [
      '/CIDInit /ProcSet findresource begin',
      '12 dict begin',
      'begincmap',
      '/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def',
      '/CMapName /Adobe-Identity-UCS def',
      '/CMapType 2 def',
      '1 begincodespacerange',
      '<0000> <FFFF>',
      'endcodespacerange',
    ];
    for (let start = 0; start < this.entries.length; start += 100) {
      const chunk = this.entries.slice(start, start + 100);
      lines.push(`${chunk.length} beginbfchar`);
      chunk.forEach((entry, offset) => {
        const cid = (start + offset + 1).toString(16).padStart(4, '0').toUpperCase();
        lines.push(`<${cid}> <${utf16Hex(entry.codePoint)}>`);
      });
      lines.push('endbfchar');
    }
    lines.push('endcmap', 'CMapName currentdict /CMap defineresource pop', 'end', 'end');
    return `${lines.join('\n')}\n`;
  }
}

function utf16Hex(codePoint: number): string {
  return Buffer.from(String.fromCodePoint(codePoint), 'utf16le').swap16().toString('hex').toUpperCase();
}

async function encodeSubset(subset: ReturnType<FontkitFont['createSubset']>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const stream = subset.encodeStream() as unknown as NodeJS.EventEmitter;
    stream.on('data', (bytes: Uint8Array) => parts.push(Buffer.from(bytes)));
    stream.on('end', () => resolve(Buffer.concat(parts)));
    stream.on('error', reject);
  });
}

/** A Flate-compressed stream (node's zlib: deterministic for a given input and level). */
export function flateStream(context: PdfObjectWriter['context'], data: Uint8Array, extra: Record<string, number | string>): PDFRawStream {
  const dict = context.obj({ ...extra, Filter: 'FlateDecode' }) as unknown as PDFDict;
  return PDFRawStream.of(dict, deflateSync(data, { level: 6 }));
}
