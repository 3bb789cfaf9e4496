// XSD validation of our PageXML and ALTO with xmllint-wasm (libxml2 compiled to WebAssembly),
// against the official schemas copied into test/fixtures/schemas/.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { validateXML } from 'xmllint-wasm';

export const SCHEMA_DIR = path.resolve(import.meta.dirname, '../fixtures/schemas');

export type XmlFormat = 'page' | 'alto';

const schemaFiles: Record<XmlFormat, string> = { page: 'pagecontent-2019-07-15.xsd', alto: 'alto-4-4.xsd' };
const cache = new Map<string, string>();

async function schemaText(file: string): Promise<string> {
  let text = cache.get(file);
  if (text === undefined) {
    text = await readFile(path.join(SCHEMA_DIR, file), 'utf8');
    cache.set(file, text);
  }
  return text;
}

/** Validates XML documents against the PAGE 2019 or ALTO 4.4 schema; returns one message per error. */
export async function validateAgainstSchema(
  format: XmlFormat,
  documents: Array<{ fileName: string; contents: string }>,
): Promise<string[]> {
  if (documents.length === 0) return [];
  const schemaFile = schemaFiles[format];
  const preload = format === 'alto' ? [{ fileName: 'xlink.xsd', contents: await schemaText('xlink.xsd') }] : [];
  const result = await validateXML({
    xml: documents.map((document, index) => ({ fileName: `doc${index}.xml`, contents: document.contents })),
    schema: [{ fileName: schemaFile, contents: await schemaText(schemaFile) }],
    preload,
    initialMemoryPages: 1024,
    maxMemoryPages: 16384,
  });
  if (result.valid) return [];
  return result.errors.map((error) => {
    const index = error.loc ? Number(/doc(\d+)\.xml/.exec(error.loc.fileName)?.[1]) : NaN;
    const name = Number.isInteger(index) ? documents[index].fileName : '?';
    return `${name}:${error.loc?.lineNumber ?? '?'}: ${error.message}`;
  });
}
