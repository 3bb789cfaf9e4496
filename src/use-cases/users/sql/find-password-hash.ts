// portal_passwords (migration 0010): the user's password hash, or undefined before one is set.
import type { Queryable } from '../../../db/database.ts';

export async function findPasswordHash(db: Queryable, userId: string): Promise<string | undefined> {
  return (await db.query<{ password_hash: string }>('select password_hash from portal_passwords where user_id = $1', [userId])).rows[0]
    ?.password_hash;
}
