// portal_flashes (migration 0014): the live messages of this owner for the page at `path`, oldest
// first, deleted as they are read (each is shown once).
import type { Queryable } from '../../../db/database.ts';

export async function takeFlashes(db: Queryable, ownerSha256: string, path: string): Promise<Buffer[]> {
  const result = await db.query<{ sealed: Buffer; flash_id: string; live: boolean }>(
    `delete from portal_flashes where owner_sha256 = $1 and path = $2 returning sealed, flash_id, expires_at > now() as live`,
    [ownerSha256, path],
  );
  return result.rows
    .filter((row) => row.live)
    .sort((a, b) => Number(a.flash_id) - Number(b.flash_id))
    .map((row) => row.sealed);
}
