// docs/correction.md quotes the prompt texts; keep it from drifting from the code.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { PRESET_PROMPTS, PRESETS } from '../../src/recognition/correction/presets.ts';
import { IMAGE_INSTRUCTION, INSTRUCTION } from '../../src/recognition/correction/prompt.ts';

test('docs/correction.md quotes every prompt text verbatim', async () => {
  const docs = await readFile(new URL('../../docs/correction.md', import.meta.url), 'utf8');
  assert.ok(docs.includes(`> ${INSTRUCTION}\n`), 'the shared instruction');
  assert.ok(docs.includes(`> ${IMAGE_INSTRUCTION}\n`), 'the image instruction');
  for (const preset of PRESETS) assert.ok(docs.includes(`### \`${preset}\`\n\n> ${PRESET_PROMPTS[preset]}\n`), preset);
});
