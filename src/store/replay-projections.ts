// Rebuild and verify: replay the whole log through the projections into scratch
// tables (a schema of their own), then either diff them with the live tables
// (verify) or swap them in for the live ones (rebuild). The last stretch of the log
// is replayed under the exclusive append lock, so the result matches the live
// tables at one instant even while jobs run. That last transaction waits for locks at most
// LOCK_TIMEOUT_MS (less than PostgreSQL's deadlock_timeout, so a submission that holds a table
// the swap needs is never the one aborted) and is retried; the swap moves tables between
// schemas instead of copying rows, so live tables are locked for milliseconds, not a copy.
import type pg from 'pg';
import { PROJECTIONS } from '../../projections/index.ts';
import { APPEND_LOCK } from './locks.ts';
import { PROJECTION_REPLAY } from './install-projections.ts';
import { checkOut } from '../db/database.ts';

const BATCH = 5000;
/** The final transaction's lock wait; PostgreSQL's deadlock_timeout is 1 s by default. */
const LOCK_TIMEOUT_MS = 500;
const FINAL_ATTEMPTS = 20;
const LOCK_NOT_AVAILABLE = '55P03';

export interface TableDifference {
  table: string;
  /** Rows only in the live table and rows only in the replayed one (a sample). */
  liveOnly: unknown[];
  replayedOnly: unknown[];
  count: number;
}

export interface VerifyReport {
  events: number;
  tables: string[];
  differences: TableDifference[];
}

export interface RebuildReport {
  events: number;
  tables: string[];
  seconds: number;
}

function projectionTables(): string[] {
  return PROJECTIONS.flatMap((projection) => projection.tables);
}

export async function verifyProjections(pool: pg.Pool): Promise<VerifyReport> {
  return withScratchReplay(pool, async (client, scratch, events) => {
    const differences: TableDifference[] = [];
    for (const table of projectionTables()) {
      const liveOnly = await client.query(`select * from public.${table} except all select * from ${scratch}.${table} limit 20`);
      const replayedOnly = await client.query(`select * from ${scratch}.${table} except all select * from public.${table} limit 20`);
      const count = await client.query<{ n: string }>(
        `select count(*) as n from ((select * from public.${table} except all select * from ${scratch}.${table})
          union all (select * from ${scratch}.${table} except all select * from public.${table})) d`,
      );
      if (Number(count.rows[0].n) > 0) {
        differences.push({ table, liveOnly: liveOnly.rows, replayedOnly: replayedOnly.rows, count: Number(count.rows[0].n) });
      }
    }
    return { events, tables: projectionTables(), differences };
  });
}

export async function rebuildProjections(pool: pg.Pool): Promise<RebuildReport> {
  const started = performance.now();
  const retired = `hwr_retired_${process.pid}_${Date.now()}`;
  const report = await withScratchReplay(pool, async (client, scratch, events) => {
    await client.query(`create schema ${retired}`);
    for (const table of projectionTables()) {
      await client.query(`alter table public.${table} set schema ${retired}`);
      await client.query(`alter table ${scratch}.${table} set schema public`);
    }
    return { events, tables: projectionTables(), seconds: 0 };
  });
  await pool.query(`drop schema if exists ${retired} cascade`);
  return { ...report, seconds: (performance.now() - started) / 1000 };
}

async function withScratchReplay<T>(
  pool: pg.Pool,
  finish: (client: pg.PoolClient, scratch: string, events: number) => Promise<T>,
): Promise<T> {
  const client = await checkOut(pool);
  const scratch = `hwr_replay_${process.pid}_${Date.now()}`;
  try {
    await client.query(`create schema ${scratch}`);
    for (const table of projectionTables()) {
      await client.query(`create table ${scratch}.${table} (like public.${table} including all)`);
    }
    await client.query(`set search_path to ${scratch}, public`);
    // Bulk of the log, without blocking appends.
    const bulk = await replayFrom(client, { tx: '0', pos: '0' }, true);
    for (let attempt = 1; ; attempt++) {
      await client.query('begin');
      try {
        await client.query(`set local lock_timeout = ${LOCK_TIMEOUT_MS}`);
        await client.query('select pg_advisory_xact_lock($1)', [APPEND_LOCK]);
        const tail = await replayFrom(client, bulk.checkpoint, false);
        await client.query('set local search_path to public');
        const result = await finish(client, scratch, bulk.events + tail.events);
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback');
        if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= FINAL_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 200 * attempt));
      }
    }
  } finally {
    await client.query('reset search_path').catch(() => {});
    await client.query(`drop schema if exists ${scratch} cascade`).catch(() => {});
    client.release();
  }
}

/** Replays batch after batch until the log (as far as `safe` lets it read) is exhausted. */
async function replayFrom(client: pg.PoolClient, from: { tx: string; pos: string }, safe: boolean) {
  let checkpoint = from;
  let events = 0;
  for (;;) {
    const batch = await replayBatch(client, checkpoint, safe);
    events += batch.replayed;
    checkpoint = batch.checkpoint;
    if (batch.replayed < BATCH) return { events, checkpoint };
  }
}

async function replayBatch(client: pg.PoolClient, after: { tx: string; pos: string }, safe: boolean) {
  const result = await client.query<{ replayed: number; last_tx: string; last_pos: string }>(
    `select replayed, last_tx::text as last_tx, last_pos from ${PROJECTION_REPLAY}($1::xid8, $2::bigint, $3, $4)`,
    [after.tx, after.pos, BATCH, safe],
  );
  const row = result.rows[0];
  return { replayed: row.replayed, checkpoint: { tx: row.last_tx, pos: String(row.last_pos) } };
}
