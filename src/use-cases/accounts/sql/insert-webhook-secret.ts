// account_secrets (migration 0001): a new account's webhook secret, written in the transaction of
// its AccountCreated (the log keeps only the fingerprint).
import type { Queryable } from '../../../db/database.ts';

export async function insertWebhookSecret(db: Queryable, accountId: string, webhookSecret: string): Promise<void> {
  await db.query('insert into account_secrets (account_id, webhook_secret) values ($1, $2)', [accountId, webhookSecret]);
}
