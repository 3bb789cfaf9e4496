// Character n-gram language model written by train/char_lm.py (stored in backoff form; natural
// logs), in either of its two forms: `hwr-char-ngram/1`, JSON, and `hwr-char-ngram/2`, packed (a
// JSON header line, then typed arrays: docs/recognition.md, "Language model files"). Both load into
// the same packed tables. The lookup below must stay identical to CharNgram.logp in
// train/char_lm.py. The file may be gzip-compressed (`lm.json.gz`, `lm.bin.gz`).
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { PipelineError } from '../page/errors.ts';
import { PackedTable, SymbolCoder } from './packed-ngrams.ts';

export const CHAR_NGRAM_FORMAT = 'hwr-char-ngram/1';
export const PACKED_CHAR_NGRAM_FORMAT = 'hwr-char-ngram/2';
const PACKED_MAGIC = Buffer.from(`${PACKED_CHAR_NGRAM_FORMAT}\n`, 'latin1');

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

/** `only`: build just those models of the file (each is hundreds of thousands of n-grams). */
export function loadCharNgramFile(file: string, only?: ModelSelection): CharNgramFile {
  let raw: unknown;
  try {
    const bytes = readLanguageModelBytes(file);
    if (bytes.subarray(0, PACKED_MAGIC.length).equals(PACKED_MAGIC)) return parsePackedCharNgramFile(bytes, file, only);
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    if (error instanceof PipelineError) throw error;
    throw new PipelineError('model_invalid', `cannot read the language model ${file}: ${(error as Error).message}`, { cause: error });
  }
  return parseCharNgramFile(raw, file, only);
}

const GZIP_MAGIC = [0x1f, 0x8b];
const JOINT_MODEL = 'all';

/** The file's bytes, gunzipped when it starts with gzip's magic bytes (whatever its name). */
function readLanguageModelBytes(file: string): Buffer {
  const bytes = readFileSync(file);
  const gzipped = bytes.length >= 2 && bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
  return gzipped ? gunzipSync(bytes) : bytes;
}

/** The `order` and `boundary` both forms' headers give, checked. */
function checkedOrderAndBoundary(header: { order?: unknown; boundary?: unknown }, invalid: (why: string) => PipelineError) {
  const { order, boundary } = header;
  if (typeof order !== 'number' || !Number.isInteger(order) || order < 1 || order > 16)
    throw invalid('order must be an integer from 1 to 16');
  if (typeof boundary !== 'string' || [...boundary].length !== 1) throw invalid('boundary must be one character');
  return { order, boundary };
}

/** The coder of a file's symbols, when every gram up to `order` of them has an exact key. */
function symbolCoder(symbols: readonly string[], order: number, invalid: (why: string) => PipelineError): SymbolCoder {
  const coder = new SymbolCoder(symbols);
  if (!coder.fits(order)) throw invalid(`${symbols.length} symbols at order ${order} are more than its n-gram keys can tell apart`);
  return coder;
}

const wantedModels =
  (names: readonly string[], only: ModelSelection | undefined) =>
  (name: string): boolean =>
    only === undefined || (only === PER_LANGUAGE_MODELS ? name !== JOINT_MODEL || names.length === 1 : name === only);

export function parseCharNgramFile(raw: unknown, where = 'language model', only?: ModelSelection): CharNgramFile {
  const invalid = (why: string): PipelineError => new PipelineError('model_invalid', `${where}: ${why}`);
  if (raw === null || typeof raw !== 'object') throw invalid('not a JSON object');
  const document = raw as Record<string, unknown>;
  if (document.format !== CHAR_NGRAM_FORMAT) throw invalid(`format must be "${CHAR_NGRAM_FORMAT}", got ${JSON.stringify(document.format)}`);
  const { order, boundary } = checkedOrderAndBoundary(document, invalid);
  const stored = document.models;
  const names = stored !== null && typeof stored === 'object' ? Object.keys(stored) : [];
  if (names.length === 0) throw invalid('models must be a non-empty object');
  const wanted = wantedModels(names, only);
  const models = new Map<string, CharNgramModel>();
  for (const [name, value] of Object.entries(stored as Record<string, unknown>)) {
    if (!wanted(name)) continue;
    const model = value as Partial<StoredModel> | null;
    if (!model || typeof model.ngrams !== 'object' || typeof model.backoff !== 'object' || typeof model.unknown !== 'number') {
      throw invalid(`model "${name}" needs ngrams, backoff and unknown`);
    }
    models.set(name, packStoredModel(order, boundary, model as StoredModel, invalid));
  }
  return { order, models };
}

/** A JSON model in packed tables, its symbols those of its own n-grams and contexts. */
function packStoredModel(order: number, boundary: string, stored: StoredModel, invalid: (why: string) => PipelineError): BackoffModel {
  const symbols = new Set<string>([boundary]);
  for (const table of [stored.ngrams, stored.backoff])
    for (const gram of Object.keys(table)) for (const symbol of gram) symbols.add(symbol);
  const coder = symbolCoder([...symbols], order, invalid);
  const table = (entries: Record<string, number>): PackedTable => {
    const grams = Object.keys(entries);
    return PackedTable.fromPairs(
      grams.map((gram) => coder.keyOf(gram)),
      grams.map((gram) => entries[gram] as number),
    );
  };
  return new BackoffModel(order, boundary, coder, table(stored.ngrams), table(stored.backoff), stored.unknown);
}

interface PackedHeader {
  format: string;
  order?: unknown;
  boundary?: unknown;
  symbols: string[];
  models: { name: string; unknown: number; ngrams: number; backoff: number }[];
}

/** A `hwr-char-ngram/2` file: its header line, then per model the n-grams' and the contexts' keys and values. */
export function parsePackedCharNgramFile(bytes: Buffer, where = 'language model', only?: ModelSelection): CharNgramFile {
  const invalid = (why: string): PipelineError => new PipelineError('model_invalid', `${where}: ${why}`);
  const end = bytes.indexOf(0x0a, PACKED_MAGIC.length);
  if (end < 0) throw invalid('the packed file has no header line');
  let header: PackedHeader;
  try {
    header = JSON.parse(bytes.subarray(PACKED_MAGIC.length, end).toString('utf8')) as PackedHeader;
  } catch (error) {
    throw invalid(`its header is not JSON: ${(error as Error).message}`);
  }
  if (header.format !== PACKED_CHAR_NGRAM_FORMAT)
    throw invalid(`format must be "${PACKED_CHAR_NGRAM_FORMAT}", got ${JSON.stringify(header.format)}`);
  const { order, boundary } = checkedOrderAndBoundary(header, invalid);
  const { symbols } = header;
  if (
    !Array.isArray(symbols) ||
    !symbols.every((s) => typeof s === 'string' && [...s].length === 1) ||
    new Set(symbols).size !== symbols.length
  )
    throw invalid('symbols must be distinct single characters');
  if (!Array.isArray(header.models) || header.models.length === 0) throw invalid('models must be a non-empty list');
  const coder = symbolCoder(symbols, order, invalid);
  const wanted = wantedModels(
    header.models.map((m) => m.name),
    only,
  );
  let offset = end + 1;
  const truncated = (): PipelineError => invalid('the file ends before its tables do');
  /**
   * Keys as LEB128 varint differences, then values as int32 thousandths (pack_document in
   * train/char_lm.py). Keys must ascend: every difference is positive (the first key too, keys start at 1).
   */
  const table = (count: number): PackedTable => {
    if (!Number.isInteger(count) || count < 0) throw invalid('table sizes must be whole numbers');
    const keys = new Float64Array(count);
    let key = 0;
    for (let i = 0; i < count; i += 1) {
      let delta = 0;
      for (let place = 1; ; place *= 128) {
        if (offset >= bytes.length) throw truncated();
        const byte = bytes[offset++] as number;
        delta += (byte & 0x7f) * place;
        if (byte < 0x80) break;
      }
      if (delta === 0) throw invalid('its keys must ascend');
      key += delta;
      keys[i] = key;
    }
    if (offset + 4 * count > bytes.length) throw truncated();
    const thousandths = new Int32Array(count);
    for (let i = 0; i < count; i += 1, offset += 4) thousandths[i] = bytes.readInt32LE(offset);
    return new PackedTable(keys, thousandths, 1000);
  };
  const models = new Map<string, CharNgramModel>();
  for (const model of header.models) {
    if (typeof model?.name !== 'string' || !Number.isFinite(model.unknown))
      throw invalid('every model needs a name and its unknown log probability');
    const ngrams = table(model.ngrams);
    const backoff = table(model.backoff);
    if (!wanted(model.name)) continue;
    models.set(model.name, new BackoffModel(order, boundary, coder, ngrams, backoff, model.unknown));
  }
  if (offset !== bytes.length) throw invalid('the file has bytes after its tables');
  return { order, models };
}

class BackoffModel implements CharNgramModel {
  readonly order: number;
  readonly boundary: string;
  private readonly coder: SymbolCoder;
  private readonly ngrams: PackedTable;
  private readonly backoff: PackedTable;
  private readonly unknown: number;
  private readonly indices: Int32Array;
  private readonly suffixKeys: Float64Array;

  constructor(order: number, boundary: string, coder: SymbolCoder, ngrams: PackedTable, backoff: PackedTable, unknown: number) {
    this.order = order;
    this.boundary = boundary;
    this.coder = coder;
    this.ngrams = ngrams;
    this.backoff = backoff;
    this.unknown = unknown;
    this.indices = new Int32Array(order);
    this.suffixKeys = new Float64Array(order + 1);
  }

  // Not cached here: the beam search's state machine (lm-states.ts) keeps what it asked. A memo of
  // every (context, char) pair asked grew to a million entries a model (100 MB and more in a worker)
  // and cost more time than it saved once the states' generations carry their scores over.
  logProbability(history: string, char: string): number {
    return this.lookUp(this.contextOf(history), char);
  }

  /**
   * The longest stored gram among context + char, context[1:] + char, ... down to char alone, plus
   * the backoff weights of the contexts passed on the way. A context with a symbol the file lacks is
   * stored nowhere (weight 0), so the search starts after its last such symbol; an unknown char is
   * never stored, so it collects every weight and ends at `unknown`.
   */
  private lookUp(context: string, char: string): number {
    // Reused buffers (a model is only read from one thread): look-ups are the beam search's
    // innermost call, and two arrays a call were a share of its garbage.
    const indices = this.indices;
    let length = 0;
    for (const symbol of context) indices[length++] = this.coder.indexOf(symbol);
    let start = 0;
    for (let i = length - 1; i >= 0; i -= 1)
      if (indices[i] === 0) {
        start = i + 1;
        break;
      }
    const charIndex = this.coder.indexOf(char);
    const { radix } = this.coder;
    // suffixKeys[i]: the key of indices[i..length), built from the end
    const suffixKeys = this.suffixKeys;
    suffixKeys.fill(0, 0, length + 1);
    for (let i = length - 1, place = 1; i >= start; i -= 1, place *= radix) {
      suffixKeys[i] = (suffixKeys[i + 1] as number) + (indices[i] as number) * place;
    }
    let total = 0;
    for (let i = start; ; i += 1) {
      const contextKey = suffixKeys[i] as number;
      if (charIndex !== 0) {
        const value = this.ngrams.get(contextKey * radix + charIndex);
        if (value !== undefined) return total + value;
      }
      if (i === length) return total + this.unknown;
      total += this.backoff.get(contextKey) ?? 0;
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
