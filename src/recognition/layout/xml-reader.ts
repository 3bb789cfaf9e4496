// A small, strict XML reader for untrusted layout files (PageXML, ALTO) and for tests:
// elements, attributes, text, comments, processing instructions, CDATA and the predefined
// and numeric character references. No DTDs at all (so no external entities, no entity
// expansion), and limits on nesting depth and element count, so a hostile file costs at
// most time linear in its size and a bounded stack.

export interface XmlElement {
  /** Qualified name as written (e.g. `pc:TextLine`). */
  name: string;
  /** Name without prefix. */
  localName: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** Concatenated text directly inside this element (not in children). */
  text: string;
}

export interface XmlLimits {
  /** Deepest element nesting accepted (default 64). */
  maxDepth: number;
  /** Most elements accepted (default 2,000,000). */
  maxElements: number;
}

/** Thrown for a document that is not well-formed or breaks a limit; `dtd` marks DOCTYPE/ENTITY declarations. */
export class XmlError extends Error {
  readonly dtd: boolean;
  constructor(message: string, dtd = false) {
    super(message);
    this.name = 'XmlError';
    this.dtd = dtd;
  }
}

const DEFAULT_LIMITS: XmlLimits = { maxDepth: 64, maxElements: 2_000_000 };

export function parseXml(source: string, limits: Partial<XmlLimits> = {}): XmlElement {
  const { maxDepth, maxElements } = { ...DEFAULT_LIMITS, ...limits };
  let position = 0;
  let elements = 0;
  const stack: XmlElement[] = [];
  let root: XmlElement | null = null;
  const fail = (message: string, dtd = false): never => {
    const line = source.slice(0, position).split('\n').length;
    throw new XmlError(`XML parse error at line ${line}: ${message}`, dtd);
  };
  if (source.charCodeAt(0) === 0xfeff) position = 1;
  while (position < source.length) {
    if (source.startsWith('<?', position)) {
      const end = source.indexOf('?>', position);
      if (end < 0) fail('unterminated processing instruction');
      position = end + 2;
    } else if (source.startsWith('<!--', position)) {
      const end = source.indexOf('-->', position);
      if (end < 0) fail('unterminated comment');
      position = end + 3;
    } else if (source.startsWith('<![CDATA[', position)) {
      const end = source.indexOf(']]>', position);
      if (end < 0) fail('unterminated CDATA');
      if (stack.length === 0) fail('CDATA outside the root element');
      stack.at(-1)!.text += source.slice(position + 9, end);
      position = end + 3;
    } else if (source.startsWith('<!', position)) {
      fail('a document type declaration (DTD, entities) is not accepted', true);
    } else if (source.startsWith('</', position)) {
      const end = source.indexOf('>', position);
      if (end < 0) fail('unterminated end tag');
      const name = source.slice(position + 2, end).trim();
      const open = stack.pop();
      if (!open || open.name !== name) fail(`end tag </${name}> does not match <${open?.name}>`);
      position = end + 1;
    } else if (source[position] === '<') {
      const match = /^<([A-Za-z_][\w.:-]*)/.exec(source.slice(position, position + 256));
      if (!match) fail('bad start tag');
      const name = match![1];
      position += match![0].length;
      const attributes: Record<string, string> = Object.create(null) as Record<string, string>;
      const attributePattern = /\s*([A-Za-z_][\w.:-]*)\s*=\s*("([^"<]*)"|'([^'<]*)')/y;
      for (;;) {
        attributePattern.lastIndex = position;
        const attribute = attributePattern.exec(source);
        if (!attribute) break;
        if (attribute[1] in attributes) fail(`duplicate attribute ${attribute[1]}`);
        attributes[attribute[1]] = decodeEntities(attribute[3] ?? attribute[4], fail);
        position = attributePattern.lastIndex;
      }
      while (/\s/.test(source[position] ?? '')) position++;
      const selfClosing = source.startsWith('/>', position);
      if (!selfClosing && source[position] !== '>') fail(`bad start tag <${name}>`);
      position += selfClosing ? 2 : 1;
      elements += 1;
      if (elements > maxElements) fail(`more than ${maxElements} elements`);
      const element: XmlElement = { name, localName: name.split(':').at(-1)!, attributes, children: [], text: '' };
      if (stack.length > 0) stack.at(-1)!.children.push(element);
      else if (root) fail('more than one root element');
      else root = element;
      if (!selfClosing) {
        stack.push(element);
        if (stack.length > maxDepth) fail(`elements nested deeper than ${maxDepth}`);
      }
    } else {
      const end = source.indexOf('<', position);
      const raw = source.slice(position, end < 0 ? source.length : end);
      if (stack.length > 0) stack.at(-1)!.text += decodeEntities(raw, fail);
      else if (raw.trim() !== '') fail('text outside the root element');
      position = end < 0 ? source.length : end;
    }
  }
  if (stack.length > 0) fail(`unclosed element <${stack.at(-1)!.name}>`);
  if (!root) fail('no root element');
  return root!;
}

function decodeEntities(text: string, fail: (message: string) => never): string {
  return text.replace(/\r\n?/g, '\n').replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]+);|&/g, (whole, entity: string | undefined) => {
    if (entity === undefined) return fail('bare & in text');
    if (entity.startsWith('#')) {
      const code = entity.startsWith('#x') ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10);
      if (code > 0x10ffff || code === 0) return fail(`bad character reference ${whole}`);
      return String.fromCodePoint(code);
    }
    const named: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
    return Object.hasOwn(named, entity) ? named[entity] : fail(`unknown entity ${whole}`);
  });
}

/** Children with the given local name. */
export function childrenNamed(element: XmlElement, localName: string): XmlElement[] {
  return element.children.filter((child) => child.localName === localName);
}

export function childNamed(element: XmlElement, localName: string): XmlElement | undefined {
  return element.children.find((child) => child.localName === localName);
}

/** All descendants (depth first, document order) with the given local name. */
export function descendantsNamed(element: XmlElement, localName: string): XmlElement[] {
  const found: XmlElement[] = [];
  const visit = (node: XmlElement): void => {
    for (const child of node.children) {
      if (child.localName === localName) found.push(child);
      visit(child);
    }
  };
  visit(element);
  return found;
}
