// docs/contract.md lists every rejection code with the HTTP status the code gives it.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { REJECTION_CODES } from '../../domain/rejections.ts';
import { REJECTION_STATUS } from '../../src/http/problem.ts';
import { PRESETS } from '../../src/pipeline/correction/presets.ts';

test('docs/contract.md gives every rejection code the status the HTTP layer answers with', async () => {
  const docs = await readFile(new URL('../../docs/contract.md', import.meta.url), 'utf8');
  for (const code of Object.keys(REJECTION_CODES) as Array<keyof typeof REJECTION_CODES>) {
    const row = new RegExp(`^\\| \`${code}\` \\| ${REJECTION_STATUS[code]} \\|`, 'm');
    assert.match(docs, row, `${code} (${REJECTION_STATUS[code]})`);
  }
});

test('docs/contract.md names every preset', async () => {
  const docs = await readFile(new URL('../../docs/contract.md', import.meta.url), 'utf8');
  for (const preset of PRESETS) assert.ok(docs.includes(`\`${preset}\``), preset);
});
