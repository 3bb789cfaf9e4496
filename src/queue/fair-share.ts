// Fair scheduling of page tasks between accounts (docs/architecture.md, "Fair scheduling").
//
// Page workers fetch the page task of highest pg-boss priority first (then the oldest). Each
// page task gets a *tag* when its job is submitted, and its priority is minus the tag, so pages
// run in tag order. An account's pages take consecutive tags after the account's last tag still
// in the queue, but never before the queue's head (the lowest tag still waiting): the n-th page
// of every account waiting at the same time runs in the same round. A 1-page job submitted while
// another account's 1,000-page job runs gets the head's tag and runs next, and two large jobs of
// two accounts alternate page by page; one account's own jobs run one after the other.
//
// Tags are relative to the queue's head: when the queue empties they start again from 0.
import { readAccountUnfinishedJobs } from '../../projections/job-status.ts';
import type { Queryable } from '../db/database.ts';
import { ACCOUNT_SUBMISSION_LOCK_NAMESPACE } from '../store/locks.ts';
import { pageTaskId, QUEUES } from './queues.ts';

/** pg-boss priorities are PostgreSQL integers. */
const MAX_TAG = 2 ** 31 - 1;

/**
 * The tag of the first page of a job `accountId` submits now, in the submitting transaction. It
 * takes the account's submission lock (held to commit), so that two submissions of one account
 * do not take the same tags.
 */
export async function firstPageTag(db: Queryable, accountId: string, jobId: string): Promise<number> {
  await db.query('select pg_advisory_xact_lock($1, hashtext($2))', [ACCOUNT_SUBMISSION_LOCK_NAMESPACE, accountId]);
  // Within a job tags grow with the page, so the account's last tag is on a last page.
  const lastPages = (await readAccountUnfinishedJobs(db, accountId))
    .filter((job) => job.job_id !== jobId)
    .map((job) => pageTaskId(job.job_id, job.page_count));
  const { rows } = await db.query<{ head: number | null; last: number | null }>(
    `select (select max(priority) from pgboss.job where name = $1 and state < 'active' and not blocked) as head,
            (select min(priority) from pgboss.job where name = $1 and id = any($2::uuid[])) as last`,
    [QUEUES.page, lastPages],
  );
  const head = rows[0].head === null ? 0 : -rows[0].head;
  const afterLast = rows[0].last === null ? 0 : 1 - rows[0].last;
  return Math.max(head, afterLast);
}

/** The pg-boss priority of the page at `index` (0-based, in page order) of a job whose first page has tag `firstTag`. */
export function pagePriority(firstTag: number, index: number): number {
  return 0 - Math.min(firstTag + index, MAX_TAG);
}
