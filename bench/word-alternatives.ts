// `npm run bench:alternatives`: what word alternatives (reading/word-alternatives.ts) cost a page.
// Recognises the fixture pages (../shared/fixtures/pages) with the default setup, then decodes each
// line's kept output frames again with the page's language model twice: the best reading alone
// (runnersUp 0, what the decoder did before) and with the 12 runners-up and the words' alternatives
// laid over them, as recognition now does; prints ms per page of each and the difference, and
// how many words got alternatives.
//
//   node bench/word-alternatives.ts [--pages DIR] [--rounds N]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/platform/config.ts';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { beamSearchCtcReadings } from '../src/recognition/decoding/ctc-beam-search.ts';
import { loadCharNgramFile, PER_LANGUAGE_MODELS, type CharNgramModel } from '../src/recognition/decoding/char-ngram-lm.ts';
import { allKnownWords, knownWordsFor } from '../src/recognition/decoding/known-words.ts';
import { mostLikelyLanguage } from '../src/recognition/decoding/page-language.ts';
import { allLines } from '../src/recognition/page/page-result.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { wordsOf } from '../src/recognition/reading/words.ts';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { markdownTable } from './lib/table.ts';

const { values } = parseArgs({
  options: { pages: { type: 'string', default: DEFAULT_PAGES_DIR }, rounds: { type: 'string', default: '5' } },
});
const rounds = Number(values.rounds);
const config = loadConfig();
const engine = await sharedEngine(config.recognition);
const spec = engine.spec.languageModel;
if (!spec) throw new Error('the default setup has no language model: no beam search, no alternatives');
const file = loadCharNgramFile(spec.file, PER_LANGUAGE_MODELS);
const knownWords = knownWordsFor(spec);
const frame = { origin: [0, 0], ux: [1, 0], uy: [0, 1] } as const;
const rows: string[][] = [];
let totalBefore = 0;
let totalAfter = 0;
let pagesTimed = 0;
try {
  for (const [index, page] of listFixturePages(values.pages).entries()) {
    const result = await recognizePage(engine, await readFile(page.imagePath), {
      name: page.name,
      pageNumber: index + 1,
      maxPixels: config.limits.maxImagePixels,
      recognize: true,
    });
    const lines = [...result.lineFrames.values()];
    if (lines.length === 0) continue;
    const language = mostLikelyLanguage(
      file.models,
      allLines(result.page).map((line) => line.text),
    );
    const model = (file.models.get(language) ?? file.models.values().next().value) as CharNgramModel;
    const words = knownWords ? (knownWords.get(language) ?? allKnownWords(knownWords)) : null;
    const decode = (runnersUp: number): { ms: number; words: number; withAlternatives: number } => {
      const started = performance.now();
      let wordCount = 0;
      let withAlternatives = 0;
      for (let round = 0; round < rounds; round += 1) {
        for (const frames of lines) {
          const count = frames.classes.symbols.length;
          const read = beamSearchCtcReadings(
            frames.scores,
            0,
            count,
            frames.steps,
            frames.classes,
            frames.logits,
            model,
            spec,
            words,
            runnersUp,
          );
          const placed = wordsOf(
            read.characters,
            frame,
            frames.steps,
            1,
            runnersUp > 0 ? { share: read.share, runnersUp: read.runnersUp } : undefined,
          );
          if (round === 0) {
            wordCount += placed.length;
            withAlternatives += placed.filter((word) => word.alternatives).length;
          }
        }
      }
      return { ms: (performance.now() - started) / rounds, words: wordCount, withAlternatives };
    };
    decode(12); // warm-up
    const before = decode(0);
    const after = decode(12);
    totalBefore += before.ms;
    totalAfter += after.ms;
    pagesTimed += 1;
    rows.push([
      page.name,
      String(lines.length),
      String(after.words),
      `${after.withAlternatives} (${((100 * after.withAlternatives) / Math.max(1, after.words)).toFixed(0)} %)`,
      before.ms.toFixed(1),
      after.ms.toFixed(1),
      (after.ms - before.ms).toFixed(1),
    ]);
  }
} finally {
  await closeSharedEngines();
}
rows.push([
  'mean a page',
  '',
  '',
  '',
  (totalBefore / pagesTimed).toFixed(1),
  (totalAfter / pagesTimed).toFixed(1),
  ((totalAfter - totalBefore) / pagesTimed).toFixed(1),
]);
console.log(`decoding a page's lines again, mean of ${rounds} rounds, one thread`);
console.log(
  markdownTable(
    ['page', 'lines', 'words', 'words with alternatives', 'beam ms (best only)', 'beam ms (with alternatives)', 'added ms'],
    rows,
  ),
);
