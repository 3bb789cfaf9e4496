// What went away under a call: the database or the blob store (a restart, a failover, a network
// cut). Such an error says nothing about the work that was asked: a worker runs its task again once
// it is back (workers/mechanics/riding-out-outages.ts), the API answers 503 `<outage>_unavailable` with
// Retry-After (http/problem.ts), the portal a 503 page, and no page counts as failed.
import { isStorageUnavailable } from '../blobs/storage-unavailable.ts';
import { isDatabaseUnavailable } from '../db/database.ts';

export type Outage = 'database' | 'storage';

/** How the service names what is away, to a person. */
export const OUTAGE_NAMES: Readonly<Record<Outage, string>> = { database: 'database', storage: 'file storage' };

/** The outage an error is, or null. The store first: an S3 failure's message could match one of pg's. */
export function outageOf(error: unknown): Outage | null {
  if (isStorageUnavailable(error)) return 'storage';
  if (isDatabaseUnavailable(error)) return 'database';
  return null;
}

export function isOutage(error: unknown): boolean {
  return outageOf(error) !== null;
}
