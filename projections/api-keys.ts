import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Authentication: key hash → account, and whether the key is revoked.
export const apiKeysProjection: Projection = {
  name: 'api_keys',
  tables: ['api_keys'],
  handles: ['ApiKeyCreated', 'ApiKeyRevoked'],
  apply: `
begin
  case e.type
  when 'ApiKeyCreated' then
    insert into api_keys (key_id, account_id, label, prefix, key_hash, created_at)
    values ((e.data->>'keyId')::uuid, substring(e.stream_id from 9)::uuid, e.data->>'label', e.data->>'prefix',
      e.data->>'keyHash', (e.data->>'createdAt')::timestamptz);
  when 'ApiKeyRevoked' then
    update api_keys set revoked_at = (e.data->>'revokedAt')::timestamptz where key_id = (e.data->>'keyId')::uuid;
  end case;
end`,
};

// Reads of this read model: authentication on every request, the `hwr keys` commands.

export interface ActiveKeyRow {
  key_id: string;
  account_id: string;
}

/** The key with this SHA-256 unless revoked; a prepared statement, since every authenticated request runs it. */
export async function findActiveKey(db: Queryable, keyHash: string): Promise<ActiveKeyRow | undefined> {
  const result = await db.query<ActiveKeyRow>({
    name: 'hwr-active-key',
    text: 'select key_id, account_id from api_keys where key_hash = $1 and revoked_at is null',
    values: [keyHash],
  });
  return result.rows[0];
}

/** The key with this id and its SHA-256 unless revoked: the secret a signed IIIF URL is checked with (docs/iiif.md). */
export async function findActiveKeyById(db: Queryable, keyId: string): Promise<(ActiveKeyRow & { key_hash: string }) | undefined> {
  const result = await db.query<ActiveKeyRow & { key_hash: string }>({
    name: 'hwr-active-key-by-id',
    text: 'select key_id, account_id, key_hash from api_keys where key_id = $1 and revoked_at is null',
    values: [keyId],
  });
  return result.rows[0];
}

export async function findKeyAccountId(db: Queryable, keyId: string): Promise<string | undefined> {
  const result = await db.query<{ account_id: string }>('select account_id from api_keys where key_id = $1', [keyId]);
  return result.rows[0]?.account_id;
}

export interface AccountKeyRow {
  key_id: string;
  label: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** An account's keys, oldest first (when each was last used is operational data: src/use-cases/accounts/sql/read-key-usage.ts). */
export async function listAccountKeys(db: Queryable, accountId: string): Promise<AccountKeyRow[]> {
  const result = await db.query<AccountKeyRow>(
    `select key_id, label, prefix, created_at, revoked_at
     from api_keys where account_id = $1 order by created_at, key_id`,
    [accountId],
  );
  return result.rows;
}
