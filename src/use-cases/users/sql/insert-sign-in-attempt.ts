// portal_sign_in_attempts (migrations 0010, 0012): a sign-in attempt, recorded as failed before it
// is counted; returns its id (markSignInAttemptOk turns it into a success).
import type { Queryable } from '../../../db/database.ts';

export async function insertSignInAttempt(db: Queryable, email: string, address: string): Promise<string> {
  const result = await db.query<{ id: string }>(
    'insert into portal_sign_in_attempts (email, address, ok) values ($1, $2, false) returning id',
    [email, address],
  );
  return result.rows[0].id;
}
