// Account and API key use cases (CLI and first start). Keys and secrets are
// generated here and shown once; only the key's SHA-256 is recorded.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { countAccounts, findAccountIdByName } from '../../projections/accounts.ts';
import { findKeyAccountId, listAccountKeys } from '../../projections/api-keys.ts';
import type { Queryable } from '../db/database.ts';
import type { CommandBus } from './command-bus.ts';
import { AccountError } from './errors.ts';
import { insertWebhookSecret } from './accounts/sql/insert-webhook-secret.ts';
import { readKeyUsage } from './accounts/sql/read-key-usage.ts';
import { saveWebhookSecret } from './accounts/sql/save-webhook-secret.ts';

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

export interface CreatedAccount {
  accountId: string;
  name: string;
  webhookSecret: string;
}

export async function createAccount(bus: CommandBus, name: string, actor = 'cli'): Promise<CreatedAccount> {
  if (!/^[\w.@-]{1,100}$/.test(name))
    throw new AccountError('invalid_account_name', 'an account name is 1-100 letters, digits, ".", "@", "_" or "-"');
  if (await findAccountId(bus.db.pool, name)) throw new AccountError('account_exists', `account ${name} already exists`);
  const accountId = randomUUID();
  const webhookSecret = randomBytes(32).toString('hex');
  try {
    await bus.account(
      accountId,
      { type: 'CreateAccount', accountId, name, webhookSecretSha256: sha256Hex(webhookSecret), now: new Date() },
      { actor },
      async (client) => {
        await insertWebhookSecret(client, accountId, webhookSecret);
      },
    );
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new AccountError('account_exists', `account ${name} already exists`);
    throw error;
  }
  return { accountId, name, webhookSecret };
}

export async function rotateWebhookSecret(bus: CommandBus, name: string, actor = 'cli'): Promise<string> {
  const accountId = await requireAccountId(bus.db.pool, name);
  const webhookSecret = randomBytes(32).toString('hex');
  await bus.account(
    accountId,
    { type: 'RotateWebhookSecret', webhookSecretSha256: sha256Hex(webhookSecret), now: new Date() },
    { actor },
    async (client) => {
      await saveWebhookSecret(client, accountId, webhookSecret);
    },
  );
  return webhookSecret;
}

export interface CreatedKey {
  keyId: string;
  key: string;
  prefix: string;
}

/** A key is `hwr_` + 40 random base62-ish characters; its first 12 characters are its visible prefix. */
export async function createApiKey(bus: CommandBus, accountName: string, label: string, actor = 'cli'): Promise<CreatedKey> {
  const accountId = await requireAccountId(bus.db.pool, accountName);
  const key = `hwr_${randomBytes(30).toString('base64url')}`;
  const prefix = key.slice(0, 12);
  const keyId = randomUUID();
  await bus.account(accountId, { type: 'CreateApiKey', keyId, label, prefix, keyHash: sha256Hex(key), now: new Date() }, { actor });
  return { keyId, key, prefix };
}

export async function revokeApiKey(bus: CommandBus, keyId: string, actor = 'cli'): Promise<void> {
  if (!/^[0-9a-f-]{36}$/i.test(keyId)) throw new AccountError('key_not_found', `no API key ${keyId}`);
  const accountId = await findKeyAccountId(bus.db.pool, keyId);
  if (!accountId) throw new AccountError('key_not_found', `no API key ${keyId}`);
  await bus.account(accountId, { type: 'RevokeApiKey', keyId, now: new Date() }, { actor });
}

export interface KeyListing {
  id: string;
  label: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export async function listApiKeys(db: Queryable, accountName: string): Promise<KeyListing[]> {
  const accountId = await requireAccountId(db, accountName);
  const keys = await listAccountKeys(db, accountId);
  const lastUsed = await readKeyUsage(
    db,
    keys.map((row) => row.key_id),
  );
  return keys.map((row) => ({
    id: row.key_id,
    label: row.label,
    prefix: row.prefix,
    created_at: row.created_at.toISOString(),
    last_used_at: lastUsed.get(row.key_id)?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  }));
}

export async function findAccountId(db: Queryable, name: string): Promise<string | null> {
  return (await findAccountIdByName(db, name)) ?? null;
}

export async function requireAccountId(db: Queryable, name: string): Promise<string> {
  const id = await findAccountId(db, name);
  if (!id) throw new AccountError('account_not_found', `no account named ${name}`);
  return id;
}

export { countAccounts };
