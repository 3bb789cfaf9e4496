// A tiny deterministic XML writer: fixed attribute order (as given), two-space indentation,
// `\n` line ends, and escaping that keeps every string exactly recoverable by a parser.

export type XmlAttributes = ReadonlyArray<readonly [name: string, value: string | number | null | undefined]>;

const INVALID_XML_CHARS =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Replaces characters that XML 1.0 cannot carry (C0 controls, lone surrogates, U+FFFE/F) with U+FFFD. */
export function toXmlSafeText(text: string): string {
  return text.replace(INVALID_XML_CHARS, '\uFFFD');
}

export function escapeText(text: string): string {
  return toXmlSafeText(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#13;');
}

export function escapeAttribute(value: string): string {
  return toXmlSafeText(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\t/g, '&#9;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;');
}

export class XmlWriter {
  private readonly parts: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n'];
  private readonly stack: string[] = [];

  /** Opens an element that will have children. */
  open(name: string, attributes: XmlAttributes = []): this {
    this.parts.push(`${this.indent()}<${name}${renderAttributes(attributes)}>\n`);
    this.stack.push(name);
    return this;
  }

  close(): this {
    const name = this.stack.pop();
    if (name === undefined) throw new Error('XmlWriter: close() without open()');
    this.parts.push(`${this.indent()}</${name}>\n`);
    return this;
  }

  /** An element without children. */
  empty(name: string, attributes: XmlAttributes = []): this {
    this.parts.push(`${this.indent()}<${name}${renderAttributes(attributes)}/>\n`);
    return this;
  }

  /** An element holding only text (text kept exactly, no indentation inside). */
  text(name: string, text: string, attributes: XmlAttributes = []): this {
    this.parts.push(`${this.indent()}<${name}${renderAttributes(attributes)}>${escapeText(text)}</${name}>\n`);
    return this;
  }

  toString(): string {
    if (this.stack.length > 0) throw new Error(`XmlWriter: unclosed elements ${this.stack.join(' > ')}`);
    return this.parts.join('');
  }

  private indent(): string {
    return '  '.repeat(this.stack.length);
  }
}

function renderAttributes(attributes: XmlAttributes): string {
  let out = '';
  for (const [name, value] of attributes) {
    if (value === null || value === undefined) continue;
    out += ` ${name}="${escapeAttribute(typeof value === 'number' ? formatNumber(value) : value)}"`;
  }
  return out;
}

/** Numbers as XML wants them: integers plain, others with at most 4 decimals, never exponent form. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) throw new Error(`XmlWriter: not a finite number: ${value}`);
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(4).replace(/0+$/, '').replace(/\.$/, '');
}

/** xsd:dateTime in UTC without milliseconds: 2024-05-01T12:00:00Z. */
export function formatDateTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
