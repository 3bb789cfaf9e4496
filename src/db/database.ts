// The PostgreSQL pool and transactions.
import pg from 'pg';
import type { Logger } from '../logger.ts';

// Timestamps come back as Date, bigint as string (global positions can exceed 2^53).
export type Queryable = Pick<pg.PoolClient, 'query'>;

export interface Database {
  pool: pg.Pool;
  url: string;
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function openDatabase(url: string, options: { max?: number; applicationName?: string } = {}, log?: Logger): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 20, application_name: options.applicationName ?? 'hwr' });
  // An idle client that loses its connection (database restart) must not crash the process;
  // the pool drops it and opens a new one when needed. Logged, so an operator sees it.
  pool.on('error', (error: Error & { code?: string }) => {
    log?.warn({ err: error, code: error.code, component: 'pg-pool', application_name: options.applicationName ?? 'hwr' }, 'idle database connection lost');
  });
  return {
    pool,
    url,
    transaction: (work) => inTransaction(pool, work),
    close: () => pool.end(),
  };
}

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await checkOut(pool);
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * A client for more than one query. pg-pool drops its own error listener while a client is
 * checked out, so a connection lost mid-use (a database restart) would emit an unhandled
 * 'error' and end the process; the query in flight rejects anyway, which is what callers see.
 */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  if (!guarded.has(client)) {
    guarded.add(client);
    client.on('error', () => {});
  }
  return client;
}

const guarded = new WeakSet<pg.PoolClient>();
