import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DEFAULT_BEAM_SEARCH } from '../../src/recognition/models/beam-search-options.ts';
import {
  lastCodePoints,
  loadCharNgramFile,
  parseCharNgramFile,
  type CharNgramModel,
} from '../../src/recognition/decoding/char-ngram-lm.ts';
import { beamSearchCtc } from '../../src/recognition/decoding/ctc-beam-search.ts';
import { decodeCtc } from '../../src/recognition/decoding/ctc-decode.ts';
import { allKnownWords, knownWordBonus, loadKnownWords } from '../../src/recognition/decoding/known-words.ts';
import { languageModelStates } from '../../src/recognition/decoding/lm-states.ts';
import { characterClasses, type CharacterClasses } from '../../src/recognition/models/charset.ts';
import { PipelineError } from '../../src/recognition/page/errors.ts';

const fixtures = new URL('../fixtures/ctc-beam-search/', import.meta.url);
const lmFile = loadCharNgramFile(new URL('tiny-lm.json', fixtures).pathname);
const lm = lmFile.models.get('all') as CharNgramModel;

/** Blank at 0, then the given characters. */
function classesOf(chars: string): CharacterClasses {
  return characterClasses(`${[...chars].join('\n')}\n`, { appendSpace: false, blankIndex: 0 });
}

/** Frames given as { char: probability }; the rest of each frame goes to blank. */
function probabilities(classes: CharacterClasses, frames: Record<string, number>[]): Float32Array {
  const count = classes.symbols.length;
  const data = new Float32Array(frames.length * count);
  frames.forEach((frame, t) => {
    let rest = 1;
    for (const [char, p] of Object.entries(frame)) {
      data[t * count + classes.symbols.indexOf(char)] = p;
      rest -= p;
    }
    data[t * count + classes.blank] = rest;
  });
  return data;
}

const text = (characters: { text: string }[]): string => characters.map((c) => c.text).join('');

test('the LM lookup gives the same log probabilities as train/char_lm.py', () => {
  const expected = JSON.parse(readFileSync(new URL('expected-logp.json', fixtures), 'utf8')) as [string, string, number][];
  for (const [history, char, logp] of expected) {
    assert.ok(Math.abs(lm.logProbability(history, char) - logp) < 1e-9, `${JSON.stringify(history)} + ${JSON.stringify(char)}`);
  }
});

test('a gzip-compressed LM file (lm.json.gz) reads as the plain one, whatever its name', async () => {
  const directory = await mkdtemp(join(tmpdir(), 'hwr-lm-'));
  const packed = gzipSync(readFileSync(new URL('tiny-lm.json', fixtures)));
  for (const name of ['lm.json.gz', 'lm.json']) {
    await writeFile(join(directory, name), packed);
    const model = loadCharNgramFile(join(directory, name)).models.get('all') as CharNgramModel;
    for (const [history, char] of [
      ['', 't'],
      ['the q', 'u'],
      ["qu'il ", '\u00e9'],
      ['xyz', 'q'],
    ] as const) {
      assert.equal(model.logProbability(history, char), lm.logProbability(history, char), `${name}: ${history} + ${char}`);
    }
  }
  await writeFile(join(directory, 'broken.json.gz'), packed.subarray(0, packed.length / 2));
  assert.throws(
    () => loadCharNgramFile(join(directory, 'broken.json.gz')),
    (error: unknown) => error instanceof PipelineError && error.code === 'model_invalid',
  );
});

test('the LM probabilities after a context sum to one over its vocabulary', () => {
  const raw = JSON.parse(readFileSync(new URL('tiny-lm.json', fixtures), 'utf8')) as {
    models: { all: { ngrams: Record<string, number> } };
  };
  const vocabulary = Object.keys(raw.models.all.ngrams).filter((gram) => [...gram].length === 1);
  for (const history of ['', 'the q', 'xyz', "qu'il"]) {
    const sum = vocabulary.reduce((total, char) => total + Math.exp(lm.logProbability(history, char)), 0);
    assert.ok(Math.abs(sum - 1) < 0.01, `${history}: ${sum}`);
  }
});

test('beam search sums over CTC paths where greedy decoding takes the single best path', () => {
  const classes = classesOf('a');
  // each frame: blank 0.6, "a" 0.4. Best path is blank-blank (""), but P("a") = 1 - 0.36 = 0.64
  const scores = probabilities(classes, [{ a: 0.4 }, { a: 0.4 }]);
  assert.equal(text(decodeCtc(scores, 0, classes.symbols.length, 2, classes, false)), '');
  assert.equal(text(beamSearchCtc(scores, 0, classes.symbols.length, 2, classes, false, null, { ...DEFAULT_BEAM_SEARCH, beta: 0 })), 'a');
});

test('repeated characters need a blank between them', () => {
  const classes = classesOf('lo');
  const count = classes.symbols.length;
  const merged = probabilities(classes, [{ l: 0.98 }, { l: 0.98 }, { o: 0.98 }]);
  assert.equal(text(beamSearchCtc(merged, 0, count, 3, classes, false, null)), 'lo');
  const separated = probabilities(classes, [{ l: 0.98 }, {}, { l: 0.98 }, { o: 0.98 }]);
  const decoded = beamSearchCtc(separated, 0, count, 4, classes, false, null);
  assert.equal(text(decoded), 'llo');
  assert.deepEqual(
    decoded.map((c) => [c.start, c.end]),
    [
      [0, 1],
      [2, 3],
      [3, 4],
    ],
  );
});

test('the language model settles an ambiguous letter that greedy decoding gets wrong', () => {
  const classes = classesOf('qeuv ');
  const count = classes.symbols.length;
  // "qu" or "qv": the image slightly prefers v
  const scores = probabilities(classes, [{ q: 0.95 }, {}, { v: 0.5, u: 0.45 }, {}, { e: 0.95 }]);
  assert.equal(text(decodeCtc(scores, 0, count, 5, classes, false)), 'qve');
  assert.equal(text(beamSearchCtc(scores, 0, count, 5, classes, false, null)), 'qve');
  assert.equal(text(beamSearchCtc(scores, 0, count, 5, classes, false, lm)), 'que');
});

test('logits, log-probabilities and probabilities decode alike; time-major strides work', () => {
  const classes = classesOf('ab');
  const count = classes.symbols.length;
  const probs = probabilities(classes, [{ a: 0.9 }, {}, { b: 0.7 }, { b: 0.6 }]);
  const logs = probs.map((p) => Math.log(p) + 3); // shifted log-probabilities are valid logits
  const fromProbs = beamSearchCtc(probs, 0, count, 4, classes, false, lm);
  const fromLogits = beamSearchCtc(logs, 0, count, 4, classes, true, lm);
  assert.equal(text(fromProbs), 'ab');
  assert.deepEqual(
    fromLogits.map((c) => [c.text, c.start, c.end]),
    fromProbs.map((c) => [c.text, c.start, c.end]),
  );
  // the same frames as the second line of a time-major [T, N=2, C] batch
  const tnc = new Float32Array(4 * 2 * count);
  for (let t = 0; t < 4; t += 1) tnc.set(probs.subarray(t * count, (t + 1) * count), (t * 2 + 1) * count);
  assert.equal(text(beamSearchCtc(tnc, count, 2 * count, 4, classes, false, lm)), 'ab');
});

test("a packed LM file (hwr-char-ngram/2, tiny-lm.bin) gives the JSON file's log probabilities; a damaged one is model_invalid", async () => {
  const bytes = readFileSync(new URL('tiny-lm.bin', fixtures));
  const packed = loadCharNgramFile(new URL('tiny-lm.bin', fixtures).pathname).models.get('all') as CharNgramModel;
  const expected = JSON.parse(readFileSync(new URL('expected-logp.json', fixtures), 'utf8')) as [string, string, number][];
  for (const [history, char] of expected) {
    assert.equal(
      packed.logProbability(history, char),
      lm.logProbability(history, char),
      `${JSON.stringify(history)} + ${JSON.stringify(char)}`,
    );
  }
  // symbols the file lacks, in the context and as the character
  for (const [history, char] of [
    ['the q\u{1d504}u', 'i'],
    ['\u{1d504}', 'q'],
    ['the qu', '\u{1d504}'],
    ['zzz', 'z'],
  ] as const) {
    assert.equal(packed.logProbability(history, char), lm.logProbability(history, char), `${history} + ${char}`);
  }
  const directory = await mkdtemp(join(tmpdir(), 'hwr-lm-'));
  await writeFile(join(directory, 'lm.bin.gz'), gzipSync(bytes));
  assert.equal(
    loadCharNgramFile(join(directory, 'lm.bin.gz')).models.get('all')?.logProbability('the q', 'u'),
    lm.logProbability('the q', 'u'),
  );
  const header = bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1) + 1;
  for (const [name, damaged] of [
    ['truncated', bytes.subarray(0, bytes.length - 3)],
    ['cut inside its keys', bytes.subarray(0, header + 10)],
    ['with bytes after its tables', Buffer.concat([bytes, Buffer.from([0])])],
    ['with a header that is not JSON', Buffer.concat([bytes.subarray(0, 20), Buffer.from('}'), bytes.subarray(21)])],
  ] as const) {
    await writeFile(join(directory, 'damaged.bin'), damaged);
    assert.throws(
      () => loadCharNgramFile(join(directory, 'damaged.bin')),
      (error: unknown) => error instanceof PipelineError && error.code === 'model_invalid',
      name,
    );
  }
});

test('a malformed language model file is refused with model_invalid', () => {
  for (const raw of [
    null,
    { format: 'arpa' },
    { format: 'hwr-char-ngram/1', order: 0, boundary: '\n', models: {} },
    { format: 'hwr-char-ngram/1', order: 3, boundary: '\n', models: { all: { ngrams: {} } } },
  ]) {
    assert.throws(
      () => parseCharNgramFile(raw),
      (error: unknown) => error instanceof PipelineError && error.code === 'model_invalid',
    );
  }
  assert.throws(
    () => loadCharNgramFile('/nonexistent/lm.json'),
    (error: unknown) => error instanceof PipelineError && error.code === 'model_invalid',
  );
});

test('LM states score a class as the LM scores the whole prefix, and share the tail context', () => {
  const classes = classesOf("the qui'l𝔄");
  const states = languageModelStates(lm, classes, 0.5, 2);
  let state = states.start();
  let prefix = '';
  for (const char of ['t', 'h', 'e', ' ', 'q', 'u', "'", 'i', 'l', '𝔄', 'e']) {
    const k = classes.symbols.indexOf(char);
    for (const probe of ['e', ' ', 'q', '𝔄']) {
      const expected = 0.5 * lm.logProbability(prefix, probe) + 2;
      assert.ok(Math.abs(states.score(state, classes.symbols.indexOf(probe)) - expected) < 1e-12, `${JSON.stringify(prefix)} + ${probe}`);
    }
    assert.ok(Math.abs(states.final(state) - 0.5 * lm.logProbability(prefix, lm.boundary)) < 1e-12);
    state = states.next(state, k);
    prefix += char;
  }
  // the tiny LM is of order 4: "the q" and "hhe q" end in the same 3 code points, one state;
  // "he" is shorter than a context, so the line's start still counts and "the" differs
  const walk = (text: string): number => [...text].reduce((s, c) => states.next(s, classes.symbols.indexOf(c)), states.start());
  assert.equal(lm.order, 4);
  assert.equal(walk('hhe q'), walk('the q'));
  assert.notEqual(walk('he'), walk('the'));
  assert.equal(lastCodePoints('ab𝔄c', 2), '𝔄c');
  assert.equal(lastCodePoints('ab𝔄c', 3), 'b𝔄c');
  assert.equal(lastCodePoints('a', 4), 'a');
});

test('LM states stay right across generations of the cache: rows carried over and blocks reused score their own contexts', () => {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const classes = classesOf(letters);
  const states = languageModelStates(lm, classes, 0.7, 1.5);
  // every three-letter context (order 4): 17 576 states, several generations of the cache and blocks in each
  const contexts = [...letters].flatMap((a) => [...letters].flatMap((b) => [...letters].map((c) => a + b + c)));
  const check = (order: string[]): void => {
    const start = states.start();
    for (const context of order) {
      const state = [...context].reduce((s, c) => states.next(s, classes.symbols.indexOf(c)), start);
      for (const probe of ['e', 'q']) {
        const expected = 0.7 * lm.logProbability(context, probe) + 1.5;
        assert.ok(Math.abs(states.score(state, classes.symbols.indexOf(probe)) - expected) < 1e-12, `${context} + ${probe}`);
      }
      assert.ok(Math.abs(states.final(state) - 0.7 * lm.logProbability(context, lm.boundary)) < 1e-12, context);
    }
  };
  check(contexts.slice(0, 9000));
  // again in reverse: contexts of the generation before start with its scores (copied), and the same state
  // numbers in reused blocks now stand for other contexts, whose scores must not be the old ones
  check(contexts.slice(0, 9000).reverse());
  check(contexts.slice(9000));
});

test('known words: a bonus at a word end wins close calls and never forces a word (same cases as train/tests/test_ctc_beam.py)', () => {
  const shared = JSON.parse(readFileSync(new URL('known-words.json', fixtures), 'utf8')) as {
    charset: string[];
    words: string[];
    options: Omit<typeof DEFAULT_BEAM_SEARCH, 'wordBonus'>;
    cases: { name: string; frames: Record<string, number>[]; plain: string; bonus: number; withBonus: string }[];
  };
  const classes = classesOf(shared.charset.join(''));
  const words = new Set(shared.words);
  for (const known of shared.cases) {
    const scores = probabilities(classes, known.frames);
    const read = (wordBonus: number) =>
      text(
        beamSearchCtc(
          scores,
          0,
          classes.symbols.length,
          known.frames.length,
          classes,
          false,
          null,
          { ...shared.options, wordBonus },
          words,
        ),
      );
    assert.equal(read(0), known.plain, `${known.name}: without the bonus`);
    assert.equal(read(known.bonus), known.withBonus, `${known.name}: with it`);
  }
});

test('known words are read from an hwr-lexicon/1 file, and a bad file is a model_invalid error', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'hwr-lexicon-'));
  const good = join(dir, 'lexicon.json');
  await writeFile(good, JSON.stringify({ format: 'hwr-lexicon/1', languages: { fr: ['chat', "l'été"], en: ['cat'] } }));
  const lexicon = loadKnownWords(good);
  assert.deepEqual([...lexicon.keys()], ['fr', 'en']);
  assert.equal(knownWordBonus('le «Chat»,', lexicon.get('fr')!, 2), 2);
  assert.equal(knownWordBonus("voir L'Été", lexicon.get('fr')!, 2), 2);
  assert.equal(knownWordBonus('le chien', lexicon.get('fr')!, 2), 0);
  assert.equal(knownWordBonus('chat 12e', lexicon.get('fr')!, 2), 0, 'a token with a digit is not a word');
  assert.deepEqual([...allKnownWords(lexicon)].sort(), ['cat', 'chat', "l'été"]);
  for (const [content, message] of [
    ['{', /cannot be read/],
    [JSON.stringify({ format: 'other', languages: {} }), /hwr-lexicon\/1/],
    [JSON.stringify({ format: 'hwr-lexicon/1', languages: { fr: [1] } }), /languages\.fr must be a list of words/],
  ] as const) {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, content);
    assert.throws(
      () => loadKnownWords(bad),
      (error) => error instanceof PipelineError && error.code === 'model_invalid' && message.test(error.message),
    );
  }
});
