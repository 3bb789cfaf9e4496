// `npm run bench:search`: the search index at scale (docs/search.md, "Scale"). Recognises the
// fixture pages (../shared/fixtures/pages) once with the default setup (cached in the temp folder),
// then fills the index of one account on a fresh embedded PostgreSQL with that text repeated,
// each copy varied (one word in eight gets one letter changed, as another reading would), up to
// each size in words; at each size: the cost per page of writing the index (writeSearchLines, as
// the export does), the index's size on disk (table, TOAST and indexes), and the p50/p99 of typical
// queries (a word, a two-word phrase) and fuzzy ones (a word with a typo, fuzzy=1), 20 hits each.
//
//   node bench/search.ts [--sizes 100000,1000000] [--queries 200] [--pages DIR]
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { writeSearchLines, type SearchLineInput } from '../projections/search.ts';
import { freePort, startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { closeSharedEngines, sharedEngine } from '../src/pipeline/shared-engine.ts';
import { loadConfig } from '../src/platform/config.ts';
import { createLogger } from '../src/platform/logger.ts';
import { recognizePage } from '../src/recognition/recognize-page.ts';
import { startRuntime } from '../src/runtime/runtime.ts';
import { searchAccount, searchLinesOf } from '../src/use-cases/search.ts';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { markdownTable } from './lib/table.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100000,1000000' },
    queries: { type: 'string', default: '200' },
    pages: { type: 'string', default: DEFAULT_PAGES_DIR },
  },
});
const sizes = values.sizes.split(',').map(Number);
const queryCount = Number(values.queries);

/** The fixture pages as recognised, a page of index lines each. */
async function recognisedPages(): Promise<SearchLineInput[][]> {
  const cache = path.join(os.tmpdir(), 'hwr-bench-search-pages.json');
  if (existsSync(cache)) return JSON.parse(await readFile(cache, 'utf8'));
  const config = loadConfig();
  const engine = await sharedEngine(config.recognition);
  const pages: SearchLineInput[][] = [];
  try {
    for (const [index, page] of listFixturePages(values.pages).entries()) {
      const options = { name: page.name, pageNumber: index + 1, maxPixels: config.limits.maxImagePixels, recognize: true };
      pages.push(searchLinesOf((await recognizePage(engine, await readFile(page.imagePath), options)).page));
    }
  } finally {
    await closeSharedEngines();
  }
  await writeFile(cache, JSON.stringify(pages));
  return pages;
}

let seed = 42;
const random = (): number => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const LETTERS = 'abcdefghijklmnopqrstuvwxyzéèàüö';
function vary(text: string): string {
  if (random() >= 1 / 8 || text.length < 3) return text;
  const at = Math.floor(random() * text.length);
  return text.slice(0, at) + LETTERS[Math.floor(random() * LETTERS.length)] + text.slice(at + 1);
}
function variedPage(page: SearchLineInput[], pageNumber: number): SearchLineInput[] {
  return page.map((line) => {
    const words = line.words.map((word) => ({ ...word, text: vary(word.text) }));
    return { ...line, page: pageNumber, words, text: words.map((word) => word.text).join(' ') };
  });
}
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const source = (await recognisedPages()).filter((page) => page.length > 0);
const wordsPerPage = source.reduce((sum, page) => sum + page.reduce((n, line) => n + line.words.length, 0), 0) / source.length;
const vocabulary = [
  ...new Set(source.flatMap((page) => page.flatMap((line) => line.words.map((word) => word.text.replace(/[^\p{L}]/gu, ''))))),
].filter((word) => word.length >= 4);
const phrases = source.flatMap((page) =>
  page.flatMap((line) =>
    line.words
      .slice(1)
      .map((word, index) => `"${line.words[index].text.replace(/[^\p{L}]/gu, '')} ${word.text.replace(/[^\p{L}]/gu, '')}"`),
  ),
);

const dir = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-search-'));
const database = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
const rows: string[][] = [];
try {
  const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'silent' });
  const runtime = await startRuntime(config, createLogger('silent'), { workers: false });
  const accountId = randomUUID();
  let words = 0;
  let pages = 0;
  const pagesPerJob = 50;
  for (const size of sizes) {
    let indexMs = 0;
    let indexedPages = 0;
    while (words < size) {
      const jobId = randomUUID();
      const lines: SearchLineInput[] = [];
      for (let n = 1; n <= pagesPerJob; n += 1) {
        const page = variedPage(source[pages % source.length], n);
        lines.push(...page);
        words += page.reduce((sum, line) => sum + line.words.length, 0);
        pages += 1;
      }
      const started = performance.now();
      await writeSearchLines(runtime.db.pool, jobId, accountId, lines);
      indexMs += performance.now() - started;
      indexedPages += pagesPerJob;
      await runtime.db.pool.query('insert into search_jobs (job_id, account_id, finished_at) values ($1, $2, now())', [jobId, accountId]);
    }
    await runtime.db.pool.query('vacuum analyze search_lines');
    const size_ = await runtime.db.pool.query<{ total: string; indexes: string }>(
      "select pg_total_relation_size('search_lines') as total, pg_indexes_size('search_lines') as indexes",
    );
    const timed = async (make: (i: number) => { q: string; fuzzy: 0 | 1 | 2 }): Promise<{ p50: number; p99: number; hits: number }> => {
      const times: number[] = [];
      let hits = 0;
      for (let i = 0; i < queryCount; i += 1) {
        const { q, fuzzy } = make(i);
        const started = performance.now();
        const answer = await searchAccount(runtime.db, accountId, { q, fuzzy, jobId: null, limit: 20, cursor: null });
        times.push(performance.now() - started);
        hits += answer.hits.length;
      }
      times.sort((a, b) => a - b);
      return { p50: percentile(times, 50), p99: percentile(times, 99), hits: hits / queryCount };
    };
    const pick = <T>(list: T[], i: number): T => list[(i * 7919) % list.length];
    const word = await timed((i) => ({ q: pick(vocabulary, i), fuzzy: 0 }));
    const phrase = await timed((i) => ({ q: pick(phrases, i), fuzzy: 0 }));
    const typo = await timed((i) => {
      const w = pick(vocabulary, i);
      const at = 1 + (i % (w.length - 2));
      return { q: w.slice(0, at) + w.slice(at + 1), fuzzy: 1 };
    });
    const ms = (value: number): string => value.toFixed(1);
    rows.push([
      words.toLocaleString('en'),
      pages.toLocaleString('en'),
      `${(Number(size_.rows[0].total) / 2 ** 20).toFixed(0)} MiB (${(Number(size_.rows[0].indexes) / 2 ** 20).toFixed(0)} in indexes)`,
      ms(indexMs / indexedPages),
      `${ms(word.p50)} / ${ms(word.p99)}`,
      `${ms(phrase.p50)} / ${ms(phrase.p99)}`,
      `${ms(typo.p50)} / ${ms(typo.p99)}`,
    ]);
    console.error(`${words} words done`);
  }
  await runtime.stop();
} finally {
  await database.stop();
  await rm(dir, { recursive: true, force: true });
}
console.log(
  `# search index (${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, load ${os.loadavg()[0].toFixed(1)}, embedded PostgreSQL 18; ` +
    `${source.length} recognised pages of ${wordsPerPage.toFixed(0)} words repeated with variations, one account, ${queryCount} queries each, 20 hits)\n`,
);
console.log(
  markdownTable(['words', 'pages', 'on disk', 'index ms/page', 'word p50/p99 ms', 'phrase p50/p99 ms', 'fuzzy typo p50/p99 ms'], rows),
);
