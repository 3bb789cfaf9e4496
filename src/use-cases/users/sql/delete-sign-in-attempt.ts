// portal_sign_in_attempts (migrations 0010, 0012): one attempt goes (a throttled one checked no password).
import type { Queryable } from '../../../db/database.ts';

export async function deleteSignInAttempt(db: Queryable, id: string): Promise<void> {
  await db.query('delete from portal_sign_in_attempts where id = $1', [id]);
}
