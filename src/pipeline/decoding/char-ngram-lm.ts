// Character n-gram language model in the `hwr-char-ngram/1` JSON format written by
// train/char_lm.py (interpolated Witten-Bell stored in backoff form; natural logs).
// The lookup below must stay identical to CharNgram.logp in train/char_lm.py. The file may be
// gzip-compressed (`lm.json.gz`: a quarter of the size, and the working tree a GPU call carries is small).
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { PipelineError } from '../errors.ts';

export const CHAR_NGRAM_FORMAT = 'hwr-char-ngram/1';

export interface CharNgramModel {
  readonly order: number;
  readonly boundary: string;
  /** Natural log of P(char | history); `history` is the line text so far. */
  logProbability(history: string, char: string): number;
}

interface StoredModel {
  ngrams: Record<string, number>;
  backoff: Record<string, number>;
  unknown: number;
}

/** All models of one LM file (`all` and per-language ones such as `en`, `fr`). */
export interface CharNgramFile {
  order: number;
  models: ReadonlyMap<string, CharNgramModel>;
}

/**
 * The models `model: "auto"` decodes with: every per-language model of the file, not the joint `all`
 * (building it for nothing cost 0.6 of 2.1 s and 18 MiB for the shipped file); `all` when the file
 * has no other.
 */
export const PER_LANGUAGE_MODELS = Symbol('per-language models');

/** Which models of a file to build: all of them, one by name, or the per-language ones. */
type ModelSelection = string | typeof PER_LANGUAGE_MODELS;

/** `only`: build just those models of the file (each is hundreds of thousands of map entries). */
export function loadCharNgramFile(file: string, only?: ModelSelection): CharNgramFile {
  let raw: unknown;
  try {
    raw = JSON.parse(readLanguageModelText(file));
  } catch (error) {
    throw new PipelineError('model_invalid', `cannot read the language model ${file}: ${(error as Error).message}`, { cause: error });
  }
  return parseCharNgramFile(raw, file, only);
}

const GZIP_MAGIC = [0x1f, 0x8b];
const JOINT_MODEL = 'all';

/** The file's JSON text, gunzipped when it starts with gzip's magic bytes (whatever its name). */
function readLanguageModelText(file: string): string {
  const bytes = readFileSync(file);
  const gzipped = bytes.length >= 2 && bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
  return (gzipped ? gunzipSync(bytes) : bytes).toString('utf8');
}

export function parseCharNgramFile(raw: unknown, where = 'language model', only?: ModelSelection): CharNgramFile {
  const invalid = (why: string): PipelineError => new PipelineError('model_invalid', `${where}: ${why}`);
  if (raw === null || typeof raw !== 'object') throw invalid('not a JSON object');
  const document = raw as Record<string, unknown>;
  if (document.format !== CHAR_NGRAM_FORMAT) throw invalid(`format must be "${CHAR_NGRAM_FORMAT}", got ${JSON.stringify(document.format)}`);
  const order = document.order;
  if (typeof order !== 'number' || !Number.isInteger(order) || order < 1 || order > 16)
    throw invalid('order must be an integer from 1 to 16');
  const boundary = document.boundary;
  if (typeof boundary !== 'string' || [...boundary].length !== 1) throw invalid('boundary must be one character');
  const stored = document.models;
  const names = stored !== null && typeof stored === 'object' ? Object.keys(stored) : [];
  if (names.length === 0) throw invalid('models must be a non-empty object');
  const wanted = (name: string): boolean =>
    only === undefined || (only === PER_LANGUAGE_MODELS ? name !== JOINT_MODEL || names.length === 1 : name === only);
  const models = new Map<string, CharNgramModel>();
  for (const [name, value] of Object.entries(stored as Record<string, unknown>)) {
    if (!wanted(name)) continue;
    const model = value as Partial<StoredModel> | null;
    if (!model || typeof model.ngrams !== 'object' || typeof model.backoff !== 'object' || typeof model.unknown !== 'number') {
      throw invalid(`model "${name}" needs ngrams, backoff and unknown`);
    }
    models.set(name, new BackoffModel(order, boundary, model as StoredModel));
  }
  return { order, models };
}

class BackoffModel implements CharNgramModel {
  readonly order: number;
  readonly boundary: string;
  private readonly ngrams: Map<string, number>;
  private readonly backoff: Map<string, number>;
  private readonly unknown: number;
  private readonly memo = new Map<string, number>();

  constructor(order: number, boundary: string, stored: StoredModel) {
    this.order = order;
    this.boundary = boundary;
    this.ngrams = new Map(Object.entries(stored.ngrams));
    this.backoff = new Map(Object.entries(stored.backoff));
    this.unknown = stored.unknown;
  }

  logProbability(history: string, char: string): number {
    const context = this.contextOf(history);
    const key = `${context}\u0000${char}`;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    const value = this.lookUp(context, char);
    // Beam search asks the same (context, char) pairs again and again; bound the memo's memory.
    if (this.memo.size >= MEMO_LIMIT) this.memo.clear();
    this.memo.set(key, value);
    return value;
  }

  private lookUp(start: string, char: string): number {
    let context = start;
    let total = 0;
    for (;;) {
      const value = this.ngrams.get(context + char);
      if (value !== undefined) return total + value;
      if (context === '') return total + this.unknown;
      total += this.backoff.get(context) ?? 0;
      context = context.slice((context.codePointAt(0) ?? 0) > 0xffff ? 2 : 1);
    }
  }

  /** The last order-1 code points of boundary + history. */
  private contextOf(history: string): string {
    return lastCodePoints(this.boundary + history, this.order - 1);
  }
}

/**
 * The last `count` code points of `text`. The LM reads only that much history (a shorter
 * one gets the boundary in front), so two histories with the same tail score alike.
 */
export function lastCodePoints(text: string, count: number): string {
  let start = text.length;
  for (let seen = 0; start > 0 && seen < count; seen += 1) {
    start -= 1;
    const unit = text.charCodeAt(start);
    if (unit >= 0xdc00 && unit <= 0xdfff && start > 0) {
      const high = text.charCodeAt(start - 1);
      if (high >= 0xd800 && high <= 0xdbff) start -= 1;
    }
  }
  return text.slice(start);
}

const MEMO_LIMIT = 1 << 20;
