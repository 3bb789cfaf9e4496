// docs/contract.md lists every error code of every boundary with the HTTP status and the
// retryability its catalog gives it.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { REJECTION_CODES, REJECTION_ERRORS } from '../../domain/rejections.ts';
import { ERROR_CATALOGS } from '../../src/errors.ts';
import { PRESETS } from '../../src/recognition/correction/presets.ts';

const docs = await readFile(new URL('../../docs/contract.md', import.meta.url), 'utf8');

/** The text of a `### heading` section of "Error codes", up to the next heading. */
function section(heading: string): string {
  const start = docs.indexOf(`\n### ${heading}\n`);
  assert.ok(start >= 0, `docs/contract.md has no section "### ${heading}"`);
  const rest = docs.slice(start + heading.length + 6);
  const end = rest.search(/^#{2,3} /m);
  return end < 0 ? rest : rest.slice(0, end);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('docs/contract.md gives every rejection code the status the HTTP layer answers with', () => {
  const rows = section('Rejection codes');
  for (const code of Object.keys(REJECTION_CODES) as Array<keyof typeof REJECTION_CODES>) {
    const row = new RegExp(`^\\| \`${code}\` \\| ${REJECTION_ERRORS[code].status} \\|`, 'm');
    assert.match(rows, row, `${code} (${REJECTION_ERRORS[code].status})`);
  }
});

test('docs/contract.md lists every code of every boundary with its status and retryability, and no other', () => {
  for (const [heading, catalog] of Object.entries(ERROR_CATALOGS)) {
    const rows = section(heading);
    for (const [code, spec] of Object.entries(catalog)) {
      const status = spec.status === null ? '—' : String(spec.status);
      const row = new RegExp(`^\\| \`${escapeRegExp(code)}\` \\| ${status} \\| ${spec.retryable ? 'yes' : 'no'} \\|`, 'm');
      assert.match(rows, row, `${heading}: ${code} (${status}, retryable ${spec.retryable})`);
    }
    const listed = [...rows.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((match) => match[1]);
    assert.deepEqual(listed.sort(), Object.keys(catalog).sort(), `${heading}: the table lists exactly the catalog's codes`);
  }
});

test('docs/contract.md names every preset', () => {
  for (const preset of PRESETS) assert.ok(docs.includes(`\`${preset}\``), preset);
});
