// A job's page and export tasks as pg-boss holds them (its table `<schema>.job`), with the
// dead-letter copies it made of them: what the stranded-jobs sweep checks for a live task.
import type { Queryable } from '../db/database.ts';
import { QUEUES } from './queues.ts';

export interface TaskRow {
  id: string;
  name: string;
  state: string;
  /** On a dead-letter copy, the id of the task it copies; null on the task itself. */
  source_id: string | null;
  retry_count: number;
  output: unknown;
}

/** The page and export tasks with these ids, and their dead-letter copies, in any state. */
export async function readPageAndExportTasks(db: Queryable, ids: readonly string[], schema = 'pgboss'): Promise<TaskRow[]> {
  const result = await db.query<TaskRow>(
    `select id, name, state, source_id, retry_count, output from ${schema}.job
      where (name = any($1) and id = any($2::uuid[])) or (name = any($3) and source_id = any($2::uuid[]))`,
    [[QUEUES.page, QUEUES.export], ids, [QUEUES.pageLost, QUEUES.exportLost]],
  );
  return result.rows;
}
