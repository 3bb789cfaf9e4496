import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { after, test } from 'node:test';
import { openDatabase } from '../../src/db/database.ts';
import { migrate, MIGRATIONS_DIR } from '../../src/store/migrate.ts';
import { PROJECTION_DISPATCHER } from '../../src/store/install-projections.ts';
import { createTestDatabase } from '../support/database.ts';

const url = await createTestDatabase();
const databases = Array.from({ length: 4 }, () => openDatabase(url, { max: 2 }));
after(() => Promise.all(databases.map((db) => db.close())));

test('several processes migrating at once apply each migration exactly once', async () => {
  const results = await Promise.all(databases.map((db) => migrate(db.pool)));
  const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort();
  // Exactly one of them applied everything; the others found nothing left to do.
  assert.deepEqual(results.map((result) => result.applied.length).sort(), [0, 0, 0, files.length]);
  const recorded = await databases[0].pool.query<{ name: string }>('select name from schema_migrations order by version');
  assert.deepEqual(
    recorded.rows.map((row) => row.name),
    files,
  );
  // And a later start applies nothing.
  assert.deepEqual((await migrate(databases[1].pool)).applied, []);
  const functions = await databases[0].pool.query(`select proname from pg_proc where proname like 'hwr_%' order by proname`);
  assert.ok(functions.rows.some((row) => row.proname === PROJECTION_DISPATCHER));
});
