// The search index's SQL on real PostgreSQL (projections/search.ts, migrations 0017 and 0018):
// words as the page results and corrections write them are found as a reader types them.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { openDatabase } from '../../src/db/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { searchLines, writeSearchLines, type SearchLineInput } from '../../projections/search.ts';
import { createTestDatabase } from '../support/database.ts';

const db = openDatabase(await createTestDatabase(), { max: 2 });
after(() => db.close());
await migrate(db.pool);

const ACCOUNT = 'a0000000-0000-4000-8000-000000000001';
const JOB = 'c0000000-0000-4000-8000-000000000001';
const box = { x: 10, y: 20, width: 30, height: 40 };
const line = (lineId: string, text: string): SearchLineInput => ({
  page: 1,
  lineId,
  text,
  words: text.split(' ').map((word) => ({ text: word, box, confidence: 0.9 })),
});

const found = async (text: string, fuzzy: 0 | 1 | 2 = 0): Promise<string[]> =>
  (await searchLines(db.pool, { accountId: ACCOUNT, text, jobId: null, limit: 20, offset: 0, fuzzy })).map((row) => row.line_id);

test('a word written in angle brackets is found, in the machine reading and in a correction', async () => {
  await db.pool.query('insert into search_jobs (job_id, account_id, finished_at) values ($1, $2, now())', [JOB, ACCOUNT]);
  await writeSearchLines(db.pool, JOB, ACCOUNT, [line('l1', 'Arthur and <Quincey> rode on'), line('l2', 'the <del>old</del> road')]);
  assert.deepEqual(await found('quincey'), ['l1'], 'PostgreSQL would read <Quincey> as a tag and index nothing');
  assert.deepEqual(await found('<Quincey>'), ['l1'], 'typed with its brackets too');
  assert.deepEqual(await found('old'), ['l2']);
  assert.deepEqual(await found('quincy', 1), ['l1'], 'and close spellings');

  // as the corrections projection keeps a corrected line (migrations/0015_corrections.sql)
  await db.pool.query(
    `insert into corrected_lines (job_id, page_number, line_id, text, corrected_at) values ($1, 1, 'l2', 'the <Morris> road', now())`,
    [JOB],
  );
  assert.deepEqual(await found('morris'), ['l2'], 'a correction in angle brackets is found');
  assert.deepEqual(await found('old'), [], 'the corrected line no longer by its machine reading');
});
