// RelaxNG validation of our TEI with xmllint-wasm (libxml2 compiled to WebAssembly) against the
// TEI Consortium's tei_all.rng (P5 4.3.0), copied into test/fixtures/schemas/ (provenance in
// test/fixtures/README.md). The same check by hand: `xmllint --noout --relaxng tei_all.rng file`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { validateXML } from 'xmllint-wasm';

export const TEI_ALL_RNG = path.resolve(import.meta.dirname, '../fixtures/schemas/tei_all.rng');

let schema: Promise<string> | null = null;

/** Validates TEI documents against tei_all.rng; returns one message per error (none: valid). */
export async function validateAgainstTeiAll(documents: Array<{ fileName: string; contents: string }>): Promise<string[]> {
  if (documents.length === 0) return [];
  schema ??= readFile(TEI_ALL_RNG, 'utf8');
  const result = await validateXML({
    xml: documents.map((document, index) => ({ fileName: `doc${index}.xml`, contents: document.contents })),
    schema: [{ fileName: 'tei_all.rng', contents: await schema }],
    extension: 'relaxng',
    initialMemoryPages: 1024,
    maxMemoryPages: 32768,
  });
  if (result.valid) return [];
  return result.errors.map((error) => {
    const index = error.loc ? Number(/doc(\d+)\.xml/.exec(error.loc.fileName)?.[1]) : Number.NaN;
    const name = Number.isInteger(index) ? documents[index].fileName : '?';
    return `${name}:${error.loc?.lineNumber ?? '?'}: ${error.message}`;
  });
}
