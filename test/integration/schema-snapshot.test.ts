// The schema of a freshly migrated database (migrate(): migrations/ and the projection functions)
// is the committed test/fixtures/schema/schema.sql, so that a change to the schema, a migration's or
// the projection code's, is reviewed as a diff of that file. After an intended change:
// `npm run schema:snapshot`, and commit the file with the change.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { dumpSchema, SNAPSHOT_FILE } from '../../scripts/schema-snapshot.ts';
import { createTestDatabase } from '../support/database.ts';

// Closed before the databases are dropped (hooks run in the order they were registered).
const databases: Database[] = [];
after(() => Promise.all(databases.map((db) => db.close())));
for (let n = 0; n < 2; n++) databases.push(openDatabase(await createTestDatabase(), { max: 2 }));

const dumps = Promise.all(
  databases.map(async (db) => {
    await migrate(db.pool);
    return dumpSchema(db.pool);
  }),
);
dumps.catch(() => {}); // awaited (and reported) by the tests

test('the dump is the same for two fresh databases, and after a second start', async () => {
  const [first, second] = await dumps;
  assert.ok(first.includes('create table public.events ('), 'the dump lists the tables');
  assert.equal(second, first, 'two databases migrated alike dump differently: something in the dump is not deterministic');
  await migrate(databases[0].pool);
  assert.equal(await dumpSchema(databases[0].pool), first, 'a second migrate() (the next start) changed the schema');
});

test('the migrated schema matches test/fixtures/schema/schema.sql', async () => {
  const [actual] = await dumps;
  const file = path.relative(process.cwd(), SNAPSHOT_FILE);
  const expected = await readFile(SNAPSHOT_FILE, 'utf8').catch(() => null);
  if (expected === null) assert.fail(`${file} is missing: make it with \`npm run schema:snapshot\` and commit it`);
  if (actual !== expected) {
    assert.fail(
      `the migrated schema differs from ${file} (- snapshot, + migrated database):\n\n${lineDiff(expected, actual)}\n\n` +
        'If the change is intended (a new migration, changed projection code), update the snapshot with ' +
        '`npm run schema:snapshot` and commit it with the change.',
    );
  }
});

/** A unified-style line diff (3 lines of context) of two texts, from their longest common subsequence. */
function lineDiff(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  // common[i][j]: the length of the longest common subsequence of a[i..] and b[j..].
  const common = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines: Array<{ mark: ' ' | '-' | '+'; text: string; line: number }> = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) lines.push({ mark: ' ', text: a[i++], line: j++ + 1 });
    else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) lines.push({ mark: '-', text: a[i++], line: j + 1 });
    else lines.push({ mark: '+', text: b[j++], line: j });
  }
  const context = 3;
  const shown = lines.map((_entry, index) =>
    lines.slice(Math.max(0, index - context), index + context + 1).some((near) => near.mark !== ' '),
  );
  const out: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!shown[index]) continue;
    if (index === 0 || !shown[index - 1]) out.push(`@@ line ${lines[index].line} of the migrated schema @@`);
    out.push(`${lines[index].mark} ${lines[index].text}`);
  }
  return out.join('\n');
}
