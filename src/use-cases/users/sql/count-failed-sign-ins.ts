// portal_sign_in_attempts (migration 0010): failed attempts since `since`, per email and per address.
import type { Queryable } from '../../../db/database.ts';

export async function countFailedSignIns(
  db: Queryable,
  email: string,
  address: string,
  since: Date,
): Promise<{ byEmail: number; byAddress: number }> {
  const result = await db.query<{ by_email: string; by_address: string }>(
    `select count(*) filter (where email = $1) as by_email, count(*) filter (where address = $2) as by_address
     from portal_sign_in_attempts where not ok and attempted_at > $3 and (email = $1 or address = $2)`,
    [email, address, since],
  );
  const { by_email, by_address } = result.rows[0];
  return { byEmail: Number(by_email), byAddress: Number(by_address) };
}
