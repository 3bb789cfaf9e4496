// Forward-only numbered migrations from migrations/NNNN_name.sql, applied in order
// under an advisory lock and recorded in schema_migrations; safe when several
// processes start at once. The projection functions are installed in the same lock.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { installProjections } from './install-projections.ts';
import { checkOut, UNBOUNDED_QUERY_TIMEOUT_MS } from '../db/database.ts';

import { MIGRATION_LOCK } from './locks.ts';
export const MIGRATIONS_DIR = path.resolve(import.meta.dirname, '../../migrations');

export interface MigrationResult {
  applied: string[];
}

export async function migrate(pool: pg.Pool): Promise<MigrationResult> {
  const client = await checkOut(pool);
  // Migrations may legitimately run long (a big table rewritten), and waiting for another
  // process's migrations is waiting, not a hang: no statement timeout for this session until it
  // goes back to the pool (reset below returns to the pool's DATABASE_STATEMENT_TIMEOUT_MS), and
  // no client-side query timeout for its long queries (pg reads the field; its types lack it).
  const unbounded = (text: string, values?: unknown[]) =>
    client.query({ text, values, query_timeout: UNBOUNDED_QUERY_TIMEOUT_MS } as pg.QueryConfig);
  try {
    await client.query('set statement_timeout = 0');
    await unbounded('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(`create table if not exists schema_migrations (
        version integer primary key, name text not null, applied_at timestamptz not null default now())`);
      const done = new Set(
        (await client.query<{ version: number }>('select version from schema_migrations')).rows.map((row) => row.version),
      );
      const applied: string[] = [];
      for (const migration of await listMigrations()) {
        if (done.has(migration.version)) continue;
        const sql = await readFile(path.join(MIGRATIONS_DIR, migration.file), 'utf8');
        await client.query('begin');
        try {
          await unbounded(sql);
          await client.query('insert into schema_migrations (version, name) values ($1, $2)', [migration.version, migration.file]);
          await client.query('commit');
        } catch (error) {
          await client.query('rollback');
          throw new Error(`migration ${migration.file} failed: ${(error as Error).message}`);
        }
        applied.push(migration.file);
      }
      await installProjections(client);
      return { applied };
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      await client.query('reset statement_timeout');
    }
  } finally {
    client.release();
  }
}

async function listMigrations(): Promise<Array<{ version: number; file: string }>> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file));
  return files.map((file) => ({ version: Number(file.slice(0, 4)), file })).sort((a, b) => a.version - b.version);
}
