// The PostgreSQL pool and transactions.
import pg from 'pg';

// Timestamps come back as Date, bigint as string (global positions can exceed 2^53).
export type Queryable = Pick<pg.PoolClient, 'query'>;

export interface Database {
  pool: pg.Pool;
  url: string;
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function openDatabase(url: string, options: { max?: number; applicationName?: string } = {}): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 20, application_name: options.applicationName ?? 'hwr' });
  // An idle client that loses its connection (database restart) must not crash the process.
  pool.on('error', () => {});
  return {
    pool,
    url,
    transaction: (work) => inTransaction(pool, work),
    close: () => pool.end(),
  };
}

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
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
