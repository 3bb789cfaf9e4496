// Guards between a model's answer and the page: the answer must be well-formed
// and name every line exactly once (else the whole answer is refused, see
// llm-corrector.ts), and each line's edit must stay small (else that line keeps
// its recognised text).
import { editDistance, editRatio } from './edit-distance.ts';

export type AnswerCheck = { ok: true; texts: Map<string, string> } | { ok: false; problem: string };

export interface RawAnswer {
  /** The model's text output, null when it returned none. */
  text: string | null;
  /** Provider finish reason as sent ('stop', 'length', 'STOP', 'MAX_TOKENS', 'SAFETY', …). */
  finishReason: string | null;
}

const TRUNCATED = new Set(['length', 'MAX_TOKENS']);

/** Whitespace runs become one space; NFC, so that equal texts compare equal. */
export function normalizeLineText(text: string): string {
  return text.normalize('NFC').replace(/\s+/gu, ' ').trim();
}

export function checkAnswer(answer: RawAnswer, expectedIds: readonly string[]): AnswerCheck {
  if (answer.finishReason !== null && TRUNCATED.has(answer.finishReason)) {
    return { ok: false, problem: 'the answer was cut off at the output token limit' };
  }
  if (answer.text === null || answer.text.trim() === '') {
    return { ok: false, problem: `the model returned no text (finish reason ${answer.finishReason ?? 'unknown'})` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripCodeFence(answer.text));
  } catch {
    return { ok: false, problem: 'the answer is not valid JSON' };
  }
  const items = isRecord(parsed) && Array.isArray(parsed.lines) ? parsed.lines : Array.isArray(parsed) ? parsed : null;
  if (items === null) return { ok: false, problem: 'the answer has no "lines" array' };

  const expected = new Set(expectedIds);
  const texts = new Map<string, string>();
  const duplicated: string[] = [];
  const unknown: string[] = [];
  for (const item of items) {
    if (!isRecord(item) || typeof item.id !== 'string' || typeof item.text !== 'string') {
      return { ok: false, problem: 'a line of the answer is not an object with string "id" and "text"' };
    }
    if (!expected.has(item.id)) unknown.push(item.id);
    else if (texts.has(item.id)) duplicated.push(item.id);
    else texts.set(item.id, item.text);
  }
  const missing = expectedIds.filter((id) => !texts.has(id));
  const problems = [
    missing.length > 0 ? `dropped ${listIds(missing)}` : null,
    duplicated.length > 0 ? `repeated ${listIds(duplicated)}` : null,
    unknown.length > 0 ? `added unknown ${listIds(unknown)}` : null,
  ].filter((problem) => problem !== null);
  if (problems.length > 0) return { ok: false, problem: `the answer ${problems.join(', ')}` };
  return { ok: true, texts };
}

export type LineVerdict = { accept: true } | { accept: false; reason: string };

/**
 * A corrected line is refused when its edit-distance ratio to the recognised text
 * (distance / longer length) exceeds `maxEditRatio`. A one-character change is
 * always accepted: on a three-letter word it is already a ratio of 0.33.
 */
export function checkLineEdit(recognised: string, corrected: string, maxEditRatio: number): LineVerdict {
  const distance = editDistance(recognised, corrected);
  if (distance <= 1) return { accept: true };
  const ratio = editRatio(recognised, corrected);
  if (ratio <= maxEditRatio) return { accept: true };
  return { accept: false, reason: `edit ratio ${ratio.toFixed(2)} over ${maxEditRatio}` };
}

function stripCodeFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/u.exec(text);
  return fenced ? fenced[1] : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function listIds(ids: string[]): string {
  const shown = ids.slice(0, 5).join(', ');
  const more = ids.length > 5 ? ` and ${ids.length - 5} more` : '';
  return `line${ids.length === 1 ? '' : 's'} ${shown}${more}`;
}
