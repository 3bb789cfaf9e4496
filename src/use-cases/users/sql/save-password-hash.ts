// portal_passwords (migration 0010): the user's password hash, written in the transaction of the
// event that sets it (UserCreated, PasswordChanged).
import type { Queryable } from '../../../db/database.ts';

export async function savePasswordHash(db: Queryable, userId: string, hash: string): Promise<void> {
  await db.query(
    `insert into portal_passwords (user_id, password_hash) values ($1, $2)
     on conflict (user_id) do update set password_hash = excluded.password_hash, updated_at = now()`,
    [userId, hash],
  );
}
