// account_secrets (migration 0001): the key callbacks are signed with (the callback worker, the
// portal's reveal), or undefined for an account without one.
import type { Queryable } from '../../../db/database.ts';

export async function findWebhookSecret(db: Queryable, accountId: string): Promise<string | undefined> {
  const result = await db.query<{ webhook_secret: string }>('select webhook_secret from account_secrets where account_id = $1', [
    accountId,
  ]);
  return result.rows[0]?.webhook_secret;
}
