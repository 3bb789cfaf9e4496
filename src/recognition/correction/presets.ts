// Document-type presets for correction. Each is a prompt fragment appended to the
// shared instruction (prompt.ts); docs/correction.md quotes them. The HTTP intake
// refuses an unknown `preset` with 400 through `isPreset`.

import { PRESETS, type Preset } from '../../shared/job-options.ts';

export { PRESETS, type Preset };

export const DEFAULT_PRESET: Preset = 'generic';

export function isPreset(name: string): name is Preset {
  return (PRESETS as readonly string[]).includes(name);
}

export const PRESET_PROMPTS: Readonly<Record<Preset, string>> = {
  generic:
    'Document type: not specified. Use the neighbouring lines as context. Fix a word only where the ' +
    'recogniser clearly misread it; keep the spelling, punctuation and abbreviations the writer used.',
  letter:
    'Document type: a handwritten letter. Expect a place and date, a salutation, body paragraphs, a ' +
    'closing formula and a signature. Names of people and places recur: keep them as written, and use ' +
    'one clear occurrence on the page to fix a misread occurrence of the same name.',
  diary:
    'Document type: a diary or journal. Entries usually begin with a date; sentences are short and ' +
    'elliptic; personal abbreviations, initials and shorthand are common. Keep the telegraphic style ' +
    'and every abbreviation; never complete a sentence or expand an abbreviation.',
  register:
    'Document type: a register or ledger (civil status, parish, accounts, inventory). Lines are records ' +
    'of names, dates, places, numbers and amounts, often in columns. Keep the order of the fields. ' +
    'Change a digit only where the recogniser confused similar shapes (1/7, 0/6, 3/8, 5/6) and the ' +
    'context (a running total, a sequence of dates or numbers) confirms it. Do not normalise names.',
  form:
    'Document type: a filled-in form. Printed labels are followed by handwritten entries (names, dates, ' +
    'addresses, codes, ticks). Keep labels as printed and entries as filled in; fix only clear ' +
    'misreadings; never fill in an empty field or invent a value.',
  historical:
    'Document type: a historical document. Keep the original spelling, capitalisation, punctuation, ' +
    'word separation, abbreviations and letter forms exactly as written (for example ſ, ꝛ, æ, ye, ' +
    '&c., superscript and tilde abbreviations): do not modernise, normalise or expand them. Correct ' +
    'only characters that the recogniser misread.',
};

export function presetPrompt(preset: Preset): string {
  return PRESET_PROMPTS[preset];
}
