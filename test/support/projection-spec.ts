// Given events → expected rows, for one projection on its own, against the real PostgreSQL.
// The given events are written to the event table as they are (no other projection runs),
// then this projection's own function is applied to the events it handles, in log order.
// `replayFromZero()` empties its tables and applies it again over the whole log, as a
// rebuild does; a projection must end in the same rows.
import assert from 'node:assert/strict';
import { after } from 'node:test';
import type { EventType } from '../../domain/events.ts';
import type { Projection } from '../../projections/index.ts';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { projectionFunctionName, projectionsVersion } from '../../src/store/install-projections.ts';
import { createTestDatabase } from './database.ts';

export interface GivenEvent {
  streamId: string;
  type: EventType;
  data: object;
  /** Defaults to a fixed instant, so that rows derived from it are predictable. */
  recordedAt?: string;
}

export const SPEC_RECORDED_AT = '2026-11-01T10:00:00.000Z';

export interface ProjectionSpec {
  db: Database;
  /** Starts from an empty log and empty tables, records `events`, applies the projection. */
  given(events: GivenEvent[]): Promise<void>;
  /** The rows of `table` (ordered by `orderBy`), only the columns `expected` rows name. */
  thenRows(table: string, orderBy: string, expected: Array<Record<string, unknown>>): Promise<void>;
  /** Empties the projection's tables and applies it over the whole log again; the rows must not change. */
  replayFromZero(): Promise<void>;
}

export async function projectionSpec(projection: Projection): Promise<ProjectionSpec> {
  const db = openDatabase(await createTestDatabase(), { max: 2 });
  after(() => db.close());
  await migrate(db.pool);
  const apply = projectionFunctionName(projection.name, projectionsVersion());
  const handles: EventType[] = projection.handles;

  const applyAll = async () => {
    await db.transaction(async (client) => {
      await client.query(`truncate ${projection.tables.join(', ')}`);
      // One statement per event, in log order: the projection sees the log as the append did.
      const events = await client.query<{ global_position: string }>(
        'select global_position from events where type = any($1) order by global_position',
        [handles],
      );
      for (const { global_position } of events.rows) {
        await client.query(`select ${apply}(e) from events e where e.global_position = $1`, [global_position]);
      }
    });
  };

  const snapshot = async () => {
    const tables: Record<string, unknown[]> = {};
    for (const table of projection.tables) tables[table] = (await db.pool.query(`select * from ${table} order by 1, 2`)).rows;
    return tables;
  };

  return {
    db,
    async given(events) {
      await db.pool.query('truncate events restart identity');
      const versions = new Map<string, number>();
      for (const event of events) {
        const version = (versions.get(event.streamId) ?? 0) + 1;
        versions.set(event.streamId, version);
        await db.pool.query(
          `insert into events (stream_id, stream_version, type, data, metadata, recorded_at) values ($1, $2, $3, $4, '{}', $5)`,
          [event.streamId, version, event.type, JSON.stringify(event.data), event.recordedAt ?? SPEC_RECORDED_AT],
        );
      }
      await applyAll();
    },
    async thenRows(table, orderBy, expected) {
      const rows = (await db.pool.query(`select * from ${table} order by ${orderBy}`)).rows as Array<Record<string, unknown>>;
      const columns = [...new Set(expected.flatMap((row) => Object.keys(row)))];
      const pick = (row: Record<string, unknown>) => Object.fromEntries(columns.map((column) => [column, normalise(row[column])]));
      assert.deepEqual(
        rows.map(pick),
        expected.map((row) => Object.fromEntries(columns.map((column) => [column, normalise(row[column])]))),
      );
    },
    async replayFromZero() {
      const before = await snapshot();
      await applyAll();
      assert.deepEqual(await snapshot(), before);
    },
  };
}

/** Dates as ISO strings and bigints as numbers, so that expected rows can be written plainly. */
function normalise(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string' && /^\d+$/.test(value) && value.length < 16) return Number(value);
  return value ?? null;
}
