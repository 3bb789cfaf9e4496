// The one request a page sends: a system instruction (shared rules + the preset
// fragment), the recognised lines as JSON, and the answer schema.
import type { TextLine } from '../page/page-result.ts';
import { presetPrompt, type Preset } from './presets.ts';

export const INSTRUCTION =
  'You correct the output of a handwriting recognition system. You receive the recognised lines of ' +
  "one page in reading order, each with its id and the recogniser's confidence (0 to 1; low values " +
  'mark lines that probably contain errors). Correct recognition errors only: misread letters, digits ' +
  'and punctuation, and words wrongly split or joined. Do not rephrase, modernise, translate, complete ' +
  'or summarise; do not move text from one line to another; do not merge, split, add or drop lines. ' +
  'Keep a word you are unsure about as recognised. Answer with every line id exactly once, in the same ' +
  'order, each with its corrected text (the recognised text when nothing needs correcting).';

export const IMAGE_INSTRUCTION =
  'The page image is attached: use it to settle doubtful readings, not to add text the recogniser did not read.';

/** JSON Schema of the answer: `{ lines: [{ id, text }] }` (an object root, as OpenAI strict mode requires). */
export const ANSWER_SCHEMA = {
  type: 'object',
  properties: {
    lines: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'The line id, exactly as given.' },
          text: { type: 'string', description: 'The corrected text of the line.' },
        },
        required: ['id', 'text'],
        additionalProperties: false,
      },
    },
  },
  required: ['lines'],
  additionalProperties: false,
} as const;

export interface CorrectionPrompt {
  system: string;
  user: string;
}

export function buildPrompt(lines: readonly TextLine[], preset: Preset, withImage: boolean): CorrectionPrompt {
  const system = [INSTRUCTION, presetPrompt(preset), withImage ? IMAGE_INSTRUCTION : null].filter((part) => part !== null).join('\n\n');
  const payload = lines.map((line) => ({ id: line.id, confidence: Math.round(line.confidence * 100) / 100, text: line.text }));
  // One line of JSON per text line: readable in logs, and no costlier than compact JSON.
  const user = `Recognised lines:\n{"lines":[\n${payload.map((entry) => JSON.stringify(entry)).join(',\n')}\n]}`;
  return { system, user };
}
