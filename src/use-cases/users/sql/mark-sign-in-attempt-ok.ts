// portal_sign_in_attempts (migrations 0010, 0012): the attempt's password was right.
import type { Queryable } from '../../../db/database.ts';

export async function markSignInAttemptOk(db: Queryable, id: string): Promise<void> {
  await db.query('update portal_sign_in_attempts set ok = true where id = $1', [id]);
}
