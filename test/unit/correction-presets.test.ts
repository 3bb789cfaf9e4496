import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_PRESET, isPreset, PRESET_PROMPTS, PRESETS, presetPrompt } from '../../src/recognition/correction/presets.ts';
import { ANSWER_SCHEMA, buildPrompt, IMAGE_INSTRUCTION, INSTRUCTION } from '../../src/recognition/correction/prompt.ts';
import { buildLine, HOOKER_RECOGNISED, requestLines } from '../support/correction-pages.ts';

test('the documented presets exist, generic is the default, and others are refused', () => {
  assert.deepEqual([...PRESETS], ['generic', 'letter', 'diary', 'register', 'form', 'historical']);
  assert.equal(DEFAULT_PRESET, 'generic');
  for (const name of PRESETS) assert.ok(isPreset(name), name);
  for (const name of ['', 'Generic', 'letters', 'novel', 'historical ', '__proto__', 'toString']) assert.equal(isPreset(name), false, name);
});

test('every preset is its own prompt fragment naming its document type', () => {
  const fragments = PRESETS.map(presetPrompt);
  assert.equal(new Set(fragments).size, PRESETS.length);
  assert.match(PRESET_PROMPTS.letter, /letter/);
  assert.match(PRESET_PROMPTS.diary, /diary/);
  assert.match(PRESET_PROMPTS.register, /register or ledger/);
  assert.match(PRESET_PROMPTS.form, /filled-in form/);
  assert.match(PRESET_PROMPTS.historical, /historical document/);
});

test('historical keeps original spelling and abbreviations', () => {
  assert.match(PRESET_PROMPTS.historical, /Keep the original spelling/);
  assert.match(PRESET_PROMPTS.historical, /abbreviations/);
  assert.match(PRESET_PROMPTS.historical, /do not modernise, normalise or expand them/);
});

test('the prompt carries the shared instruction, the preset, and every line with id and confidence', () => {
  const lines = HOOKER_RECOGNISED.map(buildLine);
  const prompt = buildPrompt(lines, 'diary', false);
  assert.ok(prompt.system.startsWith(INSTRUCTION));
  assert.ok(prompt.system.includes(PRESET_PROMPTS.diary));
  assert.ok(!prompt.system.includes(PRESET_PROMPTS.letter));
  assert.ok(!prompt.system.includes(IMAGE_INSTRUCTION));
  assert.deepEqual(
    requestLines(prompt.user),
    HOOKER_RECOGNISED.map((line) => ({ id: line.id, confidence: line.confidence, text: line.text })),
  );
  assert.ok(buildPrompt(lines, 'generic', true).system.endsWith(IMAGE_INSTRUCTION));
});

test('the answer schema is an object of {id, text} lines, all required', () => {
  assert.equal(ANSWER_SCHEMA.type, 'object');
  assert.deepEqual([...ANSWER_SCHEMA.required], ['lines']);
  assert.deepEqual([...ANSWER_SCHEMA.properties.lines.items.required], ['id', 'text']);
  assert.equal(ANSWER_SCHEMA.properties.lines.items.additionalProperties, false);
});
