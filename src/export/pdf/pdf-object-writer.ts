// Writes a PDF object by object to a stream, so that memory stays flat however many pages
// a document has: a page's image, content stream and page object go out as soon as the page
// is done; only the object offsets (for the cross-reference table) are kept.
// pdf-lib supplies the object model and its exact serialization.
import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { PDFContext, PDFHexString, type PDFObject, type PDFRef } from 'pdf-lib';

// `%PDF-1.7`, then a comment of four bytes above 127 (PDF/A-2 6.1.2: marks the file as binary).
const HEADER = Buffer.from([...Buffer.from('%PDF-1.7\n%'), 0xe2, 0xe3, 0xcf, 0xd3, 0x0a]);

export class PdfObjectWriter {
  readonly context = PDFContext.create();
  private readonly sink: Writable;
  private readonly hash: Hash = createHash('sha256');
  private readonly offsets: number[] = [];
  private position = 0;

  constructor(sink: Writable) {
    this.sink = sink;
  }

  async writeHeader(): Promise<void> {
    await this.write(HEADER);
  }

  /** A new object number; the object itself may be written later. */
  allocate(): PDFRef {
    return this.context.nextRef();
  }

  async writeObject(ref: PDFRef, object: PDFObject): Promise<void> {
    if (this.offsets[ref.objectNumber] !== undefined) throw new Error(`PDF object ${ref.objectNumber} written twice`);
    this.offsets[ref.objectNumber] = this.position;
    const head = Buffer.from(`${ref.objectNumber} 0 obj\n`, 'latin1');
    const body = Buffer.alloc(object.sizeInBytes());
    object.copyBytesInto(body, 0);
    await this.write(Buffer.concat([head, body, Buffer.from('\nendobj\n', 'latin1')]));
  }

  /** Allocates a number for `object` and writes it. */
  async add(object: PDFObject): Promise<PDFRef> {
    const ref = this.allocate();
    await this.writeObject(ref, object);
    return ref;
  }

  /** sha256 of every byte written so far (used to derive the document id). */
  digestSoFar(): Buffer {
    return this.hash.copy().digest();
  }

  /** Cross-reference table and trailer; every allocated object must have been written. */
  async finish(trailer: { root: PDFRef; info: PDFRef; id: Buffer }): Promise<{ bytes: number }> {
    const count = this.context.largestObjectNumber + 1;
    const missing: number[] = [];
    const rows = ['xref', `0 ${count}`, '0000000000 65535 f\r'];
    for (let objectNumber = 1; objectNumber < count; objectNumber++) {
      const offset = this.offsets[objectNumber];
      if (offset === undefined) missing.push(objectNumber);
      rows.push(`${String(offset ?? 0).padStart(10, '0')} 00000 n\r`);
    }
    if (missing.length > 0) throw new Error(`PDF objects allocated but never written: ${missing.join(', ')}`);
    const xrefOffset = this.position;
    const id = PDFHexString.of(trailer.id.toString('hex').toUpperCase()).toString();
    const text =
      `${rows.join('\n')}\n` +
      `trailer\n<< /Size ${count} /Root ${trailer.root.toString()} /Info ${trailer.info.toString()} /ID [ ${id} ${id} ] >>\n` +
      `startxref\n${xrefOffset}\n%%EOF\n`;
    await this.write(Buffer.from(text, 'latin1'));
    return { bytes: this.position };
  }

  private async write(chunk: Buffer): Promise<void> {
    this.hash.update(chunk);
    this.position += chunk.length;
    if (!this.sink.write(chunk)) await once(this.sink, 'drain');
  }
}
