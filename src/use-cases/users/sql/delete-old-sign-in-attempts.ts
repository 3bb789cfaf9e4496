// portal_sign_in_attempts (migration 0010): attempts are kept a day.
import type { Queryable } from '../../../db/database.ts';

export async function deleteOldSignInAttempts(db: Queryable): Promise<void> {
  await db.query(`delete from portal_sign_in_attempts where attempted_at < now() - interval '1 day'`);
}
