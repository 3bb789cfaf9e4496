// portal_flashes (migration 0014): a sealed one-time message for the page at `path`, kept
// `lifetimeMs`; expired ones (never taken) go at the same time.
import type { Queryable } from '../../../db/database.ts';

export async function insertFlash(db: Queryable, ownerSha256: string, path: string, sealed: Buffer, lifetimeMs: number): Promise<void> {
  await db.query('delete from portal_flashes where expires_at <= now()');
  await db.query(
    `insert into portal_flashes (owner_sha256, path, sealed, expires_at) values ($1, $2, $3, now() + $4 * interval '1 millisecond')`,
    [ownerSha256, path, sealed, lifetimeMs],
  );
}
