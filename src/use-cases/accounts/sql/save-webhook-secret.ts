// account_secrets (migration 0001): the account's new webhook secret, written in the transaction of
// its WebhookSecretRotated.
import type { Queryable } from '../../../db/database.ts';

export async function saveWebhookSecret(db: Queryable, accountId: string, webhookSecret: string): Promise<void> {
  await db.query(
    `insert into account_secrets (account_id, webhook_secret) values ($1, $2)
       on conflict (account_id) do update set webhook_secret = excluded.webhook_secret, updated_at = now()`,
    [accountId, webhookSecret],
  );
}
