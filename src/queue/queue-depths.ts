// Per queue, what waits and what runs, from pg-boss's own table (pgboss.job): the metrics
// endpoint's queue gauges read it at every scrape.
import type { Queryable } from '../db/database.ts';

export interface QueueDepth {
  name: string;
  /** Tasks waiting to run now (created or retry, start time reached). */
  ready: number;
  /** Tasks running. */
  active: number;
  /** Age in seconds of the oldest ready task; null when none is ready. */
  oldestReadySeconds: number | null;
}

/** One entry per queue of `queues` that has a waiting or running task; a queue with none has no entry. */
export async function readQueueDepths(db: Queryable, queues: readonly string[]): Promise<QueueDepth[]> {
  const result = await db.query<{ name: string; ready: string; active: string; oldest: number | null }>(
    `select name,
            count(*) filter (where state in ('created', 'retry') and start_after <= now()) as ready,
            count(*) filter (where state = 'active') as active,
            extract(epoch from now() - min(created_on) filter (where state in ('created', 'retry') and start_after <= now()))::float8 as oldest
       from pgboss.job where name = any($1) and state in ('created', 'retry', 'active') group by name`,
    [queues],
  );
  return result.rows.map((row) => ({
    name: row.name,
    ready: Number(row.ready),
    active: Number(row.active),
    oldestReadySeconds: row.oldest,
  }));
}
